/**
 * One workflow: its current definition and versions, its triggers with their URLs (a webhook
 * URL is a secret: shown only when asked), and a "try it" form made from the input schema that
 * calls a trigger synchronously or asynchronously with an API key the user types.
 */
import { useState } from 'preact/hooks';
import { api, failureOf, unwrap } from '../api.ts';
import { rememberKey, rememberedKey } from '../keys.ts';
import { Link } from '../router.tsx';
import { SchemaFields, readInputs } from '../schema-form.tsx';
import { CompareVersions } from '../compare.tsx';
import { CopyButton, Empty, ErrorBox, PageTitle, Show, Time, useApi } from '../ui.tsx';
import type { Trigger, Workflow } from '../../../generated/openapi/client.ts';

async function load(automationId: string) {
  const [workflow, versions, triggers] = await Promise.all([
    unwrap(api.GET('/v1/workflows/{automationId}', { params: { path: { automationId } } })),
    unwrap(
      api.GET('/v1/workflows/{automationId}/versions', { params: { path: { automationId }, query: { limit: 50 } } }),
    ),
    unwrap(api.GET('/v1/triggers', { params: { query: { automationId, limit: 200 } } })),
  ]);
  return { workflow, versions: versions.items, triggers: triggers.items };
}

function TriggerUrl({ trigger }: { trigger: Trigger }) {
  const [shown, setShown] = useState(false);
  const url = trigger.urls.trigger;
  if (trigger.kind === 'api') {
    return (
      <span class="url">
        <code>{url}</code> <CopyButton text={url} label={`Copy the URL of trigger ${trigger.name}`} />
      </span>
    );
  }
  return shown ? (
    <span class="url">
      <code>{url}</code> <CopyButton text={url} label={`Copy the webhook URL of trigger ${trigger.name}`} />{' '}
      <button type="button" class="small" onClick={() => setShown(false)}>
        Hide
      </button>
    </span>
  ) : (
    <span class="url">
      <code>{url.replace(/\/ext\/webhook\/[^/]+\//, '/ext/webhook/••••••/')}</code>{' '}
      <button
        type="button"
        class="small"
        onClick={() => setShown(true)}
        aria-label={`Show the webhook URL of trigger ${trigger.name}`}
      >
        Show
      </button>
    </span>
  );
}

function Triggers({ triggers }: { triggers: Trigger[] }) {
  if (triggers.length === 0)
    return (
      <Empty title="This workflow has no trigger yet.">
        Add one with <code>POST /v1/triggers</code> (<code>kind</code> <code>api</code> or <code>webhook</code>) to call
        it over HTTP.
      </Empty>
    );
  return (
    <table>
      <thead>
        <tr>
          <th scope="col">Trigger</th>
          <th scope="col">Kind</th>
          <th scope="col">Enabled</th>
          <th scope="col">URL</th>
          <th scope="col">Runs</th>
        </tr>
      </thead>
      <tbody>
        {triggers.map((t) => (
          <tr key={t.triggerId}>
            <td>
              {t.name}
              <div class="muted small-text">{t.triggerId}</div>
            </td>
            <td>{t.kind}</td>
            <td>{t.enabled ? 'yes' : 'no'}</td>
            <td>
              <TriggerUrl trigger={t} />
            </td>
            <td>
              <Link to={`/runs?triggerId=${encodeURIComponent(t.triggerId)}`}>Runs</Link>
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

interface Outcome {
  status: number;
  runId: string | null;
  automationId: string | null;
  body: unknown;
}

async function callTrigger(
  trigger: Trigger,
  apiKey: string,
  inputs: Record<string, unknown>,
  sync: boolean,
): Promise<Outcome> {
  const header = { 'x-api-wait': sync ? ('true' as const) : ('false' as const) };
  const call =
    trigger.kind === 'api'
      ? api.POST('/ext/triggers/{triggerId}', {
          params: { path: { triggerId: trigger.triggerId }, header },
          headers: { 'X-API-KEY': apiKey },
          body: inputs,
        })
      : api.POST('/ext/webhook/{apiKey}/triggers/{triggerId}', {
          params: { path: { apiKey, triggerId: trigger.triggerId }, header },
          body: inputs,
        });
  const { data, error, response } = await call;
  if (!response.ok) throw failureOf(response, error);
  return {
    status: response.status,
    runId: response.headers.get('X-Pf-Run-Id'),
    automationId: response.headers.get('X-Pf-Automation-Id'),
    body: data ?? null,
  };
}

function TryIt({ workflow, triggers }: { workflow: Workflow; triggers: Trigger[] }) {
  const usable = triggers.filter((t) => t.enabled);
  const [outcome, setOutcome] = useState<Outcome>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  if (usable.length === 0)
    return <Empty title="Nothing to try yet.">Enable or add a trigger of this workflow to call it from here.</Empty>;
  return (
    <form
      class="tryit"
      aria-labelledby="tryit-title"
      onSubmit={async (e) => {
        e.preventDefault();
        const form = e.currentTarget;
        const data = new FormData(form);
        setError(undefined);
        setOutcome(undefined);
        let inputs: Record<string, unknown>;
        try {
          inputs = readInputs(workflow.definition.inputSchema, form);
        } catch (err) {
          setError(err);
          return;
        }
        const trigger = usable.find((t) => t.triggerId === data.get('triggerId')) ?? usable[0]!;
        const apiKey = String(data.get('apiKey') ?? '');
        rememberKey(apiKey);
        setBusy(true);
        try {
          setOutcome(await callTrigger(trigger, apiKey, inputs, data.get('mode') === 'sync'));
        } catch (err) {
          setError(err);
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2 id="tryit-title">Try it</h2>
      <div class="field">
        <label for="try-trigger">Trigger</label>
        <select id="try-trigger" name="triggerId">
          {usable.map((t) => (
            <option key={t.triggerId} value={t.triggerId}>
              {t.name} ({t.kind})
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="try-key">API key</label>
        <input
          id="try-key"
          name="apiKey"
          type="password"
          required
          autocomplete="off"
          defaultValue={rememberedKey() ?? ''}
          aria-describedby="try-key-help"
        />
        <p class="help" id="try-key-help">
          A trigger API key of the organisation (<code>switchyard keys create</code>); kept in this tab's memory only.
        </p>
      </div>
      <fieldset>
        <legend>Inputs</legend>
        <SchemaFields schema={workflow.definition.inputSchema} idPrefix="try-in" />
      </fieldset>
      <fieldset class="radios">
        <legend>Mode</legend>
        <input type="radio" id="try-async" name="mode" value="async" defaultChecked />
        <label for="try-async">Asynchronous (returns the run id at once)</label>
        <input type="radio" id="try-sync" name="mode" value="sync" />
        <label for="try-sync">Synchronous (waits up to 60 s for the result)</label>
      </fieldset>
      <button type="submit" class="primary" disabled={busy}>
        {busy ? 'Calling…' : 'Call the trigger'}
      </button>
      <div aria-live="polite">
        {error !== undefined && <ErrorBox error={error} title="The trigger call failed" />}
        {outcome && (
          <div class="outcome">
            <p>
              Answered {outcome.status}
              {outcome.runId && (
                <>
                  {' '}
                  — run{' '}
                  <Link to={`/runs/${outcome.automationId ?? workflow.automationId}/${outcome.runId}`}>
                    {outcome.runId}
                  </Link>
                </>
              )}
            </p>
            {outcome.body !== null && <pre class="json">{JSON.stringify(outcome.body, null, 2)}</pre>}
          </div>
        )}
      </div>
    </form>
  );
}

export function WorkflowDetailPage({ automationId }: { automationId: string }) {
  const state = useApi(() => load(automationId), [automationId]);
  const title = state.data?.workflow.name ?? automationId;
  return (
    <>
      <PageTitle>{`Workflow ${title}`}</PageTitle>
      <p>
        <Link to="/workflows">All workflows</Link> ·{' '}
        <Link to={`/runs?automationId=${encodeURIComponent(automationId)}`}>Runs</Link> ·{' '}
        <Link to={`/workflows/${encodeURIComponent(automationId)}/edit`}>Edit the definition</Link>
      </p>
      <Show state={state} what="the workflow">
        {({ workflow, versions, triggers }) => (
          <>
            <dl class="facts">
              <dt>Id</dt>
              <dd>
                <code>{workflow.automationId}</code>
              </dd>
              <dt>Version</dt>
              <dd>{workflow.version}</dd>
              <dt>Description</dt>
              <dd>{workflow.description ?? '—'}</dd>
              <dt>Updated</dt>
              <dd>
                <Time iso={workflow.updatedAt} />
              </dd>
            </dl>
            <section aria-labelledby="wf-triggers">
              <h2 id="wf-triggers">Triggers</h2>
              <Triggers triggers={triggers} />
            </section>
            <section>
              <TryIt workflow={workflow} triggers={triggers} />
            </section>
            <section aria-labelledby="wf-steps">
              <h2 id="wf-steps">Steps</h2>
              <ol>
                {workflow.definition.steps.map((s, i) => (
                  <li key={i}>
                    {(s as { name?: string }).name ?? `Step ${i}`}{' '}
                    <span class="muted">({(s as { type?: string }).type})</span>
                  </li>
                ))}
              </ol>
            </section>
            <section aria-labelledby="wf-versions">
              <h2 id="wf-versions">Versions</h2>
              <ul>
                {versions.map((v) => (
                  <li key={v.version}>
                    Version {v.version} — {v.name}, published <Time iso={v.createdAt} />
                  </li>
                ))}
              </ul>
              <h3>Compare two versions</h3>
              <CompareVersions automationId={workflow.automationId} versions={versions.map((v) => v.version)} />
            </section>
            <details>
              <summary>Definition (JSON)</summary>
              <pre class="json">{JSON.stringify(workflow.definition, null, 2)}</pre>
            </details>
          </>
        )}
      </Show>
    </>
  );
}
