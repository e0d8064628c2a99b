/**
 * Creating a workflow, or publishing a new version of one, in the definition editor
 * (src/editor/definition-editor.ts, CodeMirror 6, loaded when this page first opens). A save
 * sends the JSON as it is: the API's answer decides, and a 400's `details` are shown inline at
 * their `instancePath` as well as listed.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiFailure, failureOf, unwrap } from '../api.ts';
import { Link, navigate } from '../router.tsx';
import { ErrorBox, Loading, PageTitle, Show, useApi } from '../ui.tsx';
import type { CodeStep, DefinitionEditor, DetailError } from '../editor/definition-editor.ts';
import type { Workflow } from '../../../generated/openapi/client.ts';

const STARTER = `${JSON.stringify(
  {
    name: 'New workflow',
    description: 'What the workflow does.',
    steps: [{ type: 'code', name: 'hello', code: "return { hello: ctx.inputs.name ?? 'world' };" }],
  },
  null,
  2,
)}\n`;

async function save(workflow: Workflow | undefined, text: string): Promise<Workflow> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new ApiFailure(0, 'invalid_json', `The definition is not valid JSON: ${(err as Error).message}`);
  }
  const definition = body as Workflow['definition'];
  if (!workflow) return unwrap(api.POST('/v1/workflows', { body: definition }));
  const { data, error, response } = await api.PUT('/v1/workflows/{automationId}', {
    params: { path: { automationId: workflow.automationId }, header: { 'If-Match': `"${workflow.version}"` } },
    body: definition,
  });
  if (!response.ok || !data) throw failureOf(response, error);
  return data;
}

function Editor({ workflow }: { workflow: Workflow | undefined }) {
  const jsonRef = useRef<HTMLDivElement>(null);
  const codeRef = useRef<HTMLDivElement>(null);
  const editor = useRef<DefinitionEditor | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>();
  const [ready, setReady] = useState(false);
  const [steps, setSteps] = useState<CodeStep[]>([]);
  const [problems, setProblems] = useState<string[]>([]);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);

  useEffect(() => {
    let gone = false;
    import('../editor/definition-editor.ts').then(
      ({ createDefinitionEditor }) => {
        if (gone || !jsonRef.current || !codeRef.current) return;
        editor.current = createDefinitionEditor({
          jsonParent: jsonRef.current,
          jsonLabel: 'Definition (JSON)',
          codeParent: codeRef.current,
          codeLabel: 'Step code (JavaScript)',
          doc: workflow ? `${JSON.stringify(workflow.definition, null, 2)}\n` : STARTER,
          onCodeSteps: setSteps,
          onProblems: setProblems,
        });
        setReady(true);
      },
      (err: unknown) => setLoadError(err),
    );
    return () => {
      gone = true;
      editor.current?.destroy();
      editor.current = undefined;
    };
  }, [workflow]);

  async function onSave(e: Event) {
    e.preventDefault();
    const ed = editor.current;
    if (!ed) return;
    setBusy(true);
    setError(undefined);
    try {
      const saved = await save(workflow, ed.text());
      navigate(`/workflows/${saved.automationId}`);
    } catch (err) {
      setError(err);
      if (err instanceof ApiFailure && Array.isArray(err.details)) ed.showApiErrors(err.details as DetailError[]);
    } finally {
      setBusy(false);
    }
  }

  return (
    <form class="editor" onSubmit={onSave} aria-label={workflow ? 'Edit the workflow' : 'Create a workflow'}>
      <h2>Definition (JSON)</h2>
      <p class="help">
        The workflow definition (<code>schemas/workflow/definition.schema.json</code>). Ctrl+Space completes property
        names and values; errors are underlined as you type and listed under the editor, and after a save the API's own
        errors are shown where they apply. Tab moves on to the next control.
      </p>
      <div>
        {loadError !== undefined && <ErrorBox error={loadError} title="Could not load the editor" />}
        {!ready && loadError === undefined && <Loading what="the editor" />}
      </div>
      <div key="json-host" ref={jsonRef} class="cm-host" />
      <div class="problems">
        <h3 id="problems-title">{problems.length === 0 ? 'No problems found' : `Problems (${problems.length})`}</h3>
        {problems.length > 0 && (
          <ul aria-labelledby="problems-title">
            {problems.map((p, i) => (
              <li key={i}>{p}</li>
            ))}
          </ul>
        )}
      </div>
      <h2>Step code (JavaScript)</h2>
      {/* Stable wrappers: the editors' host elements hold DOM that Preact does not manage, so no
          conditional sibling may take their place. */}
      <div>
        {steps.length === 0 ? (
          <p class="muted">
            The definition has no <code>code</code> step; its JavaScript would be edited here.
          </p>
        ) : (
          <div class="field">
            <label for="code-step">Code of step</label>
            <select id="code-step" onChange={(e) => editor.current?.selectCodeStep(Number(e.currentTarget.value))}>
              {steps.map((s) => (
                <option key={s.index} value={s.index}>
                  {s.index}: {s.name}
                </option>
              ))}
            </select>
          </div>
        )}
      </div>
      <div key="code-host" ref={codeRef} class={steps.length === 0 ? 'cm-host hidden' : 'cm-host'} />
      <div aria-live="polite">
        {error !== undefined && (
          <ErrorBox error={error} title={workflow ? 'The new version was not saved' : 'The workflow was not created'} />
        )}
      </div>
      <p class="actions">
        <button type="submit" class="primary" disabled={busy || !ready}>
          {busy ? 'Saving…' : workflow ? `Save as version ${workflow.version + 1}` : 'Create the workflow'}
        </button>{' '}
        <Link to={workflow ? `/workflows/${workflow.automationId}` : '/workflows'}>Cancel</Link>
      </p>
    </form>
  );
}

export function WorkflowNewPage() {
  return (
    <>
      <PageTitle>New workflow</PageTitle>
      <p>
        <Link to="/workflows">All workflows</Link>
      </p>
      <Editor workflow={undefined} />
    </>
  );
}

export function WorkflowEditPage({ automationId }: { automationId: string }) {
  const state = useApi(
    () => unwrap(api.GET('/v1/workflows/{automationId}', { params: { path: { automationId } } })),
    [automationId],
  );
  return (
    <>
      <PageTitle>{`Edit workflow ${state.data?.name ?? automationId}`}</PageTitle>
      <p>
        <Link to={`/workflows/${automationId}`}>Back to the workflow</Link>
      </p>
      <Show state={state} what="the workflow">
        {(workflow) => <Editor workflow={workflow} />}
      </Show>
    </>
  );
}
