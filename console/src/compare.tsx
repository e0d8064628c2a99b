/**
 * Two versions of a workflow side by side: their definitions as JSON, lines removed on the
 * left and added on the right marked (the `diff` library, loaded when a comparison is first
 * asked for).
 */
import { useState } from 'preact/hooks';
import { api, unwrap } from './api.ts';
import { ErrorBox, Loading } from './ui.tsx';

interface Row {
  left: string | undefined;
  right: string | undefined;
  change: 'same' | 'changed' | 'removed' | 'added';
}

function lines(text: string): string[] {
  const out = text.split('\n');
  if (out[out.length - 1] === '') out.pop();
  return out;
}

async function compare(automationId: string, a: number, b: number): Promise<{ rows: Row[]; a: number; b: number }> {
  const get = (version: number) =>
    unwrap(api.GET('/v1/workflows/{automationId}/versions/{version}', { params: { path: { automationId, version } } }));
  const [left, right, { diffLines }] = await Promise.all([get(a), get(b), import('diff')]);
  const rows: Row[] = [];
  const parts = diffLines(
    `${JSON.stringify(left.definition, null, 2)}\n`,
    `${JSON.stringify(right.definition, null, 2)}\n`,
  );
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i]!;
    if (!part.added && !part.removed) {
      for (const l of lines(part.value)) rows.push({ left: l, right: l, change: 'same' });
    } else if (part.removed && parts[i + 1]?.added) {
      const removed = lines(part.value);
      const added = lines(parts[i + 1]!.value);
      for (let j = 0; j < Math.max(removed.length, added.length); j++)
        rows.push({ left: removed[j], right: added[j], change: 'changed' });
      i++;
    } else if (part.removed) {
      for (const l of lines(part.value)) rows.push({ left: l, right: undefined, change: 'removed' });
    } else {
      for (const l of lines(part.value)) rows.push({ left: undefined, right: l, change: 'added' });
    }
  }
  return { rows, a, b };
}

export function CompareVersions({ automationId, versions }: { automationId: string; versions: number[] }) {
  const [result, setResult] = useState<Awaited<ReturnType<typeof compare>>>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  if (versions.length < 2) return <p class="muted">There is one version so far; a save publishes the next one.</p>;
  const sorted = [...versions].sort((x, y) => y - x);
  return (
    <>
      <form
        class="inline-form"
        aria-label="Compare two versions"
        onSubmit={async (e) => {
          e.preventDefault();
          const data = new FormData(e.currentTarget);
          setBusy(true);
          setError(undefined);
          try {
            setResult(await compare(automationId, Number(data.get('a')), Number(data.get('b'))));
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <div class="field">
          <label for="cmp-a">Version</label>
          <select id="cmp-a" name="a">
            {sorted.map((v, i) => (
              <option key={v} value={v} selected={i === 1}>
                {v}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="cmp-b">with version</label>
          <select id="cmp-b" name="b">
            {sorted.map((v, i) => (
              <option key={v} value={v} selected={i === 0}>
                {v}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" disabled={busy}>
          Compare
        </button>
      </form>
      {busy && <Loading what="the versions" />}
      {error !== undefined && <ErrorBox error={error} title="Could not compare the versions" />}
      {result && (
        <table class="diff">
          <caption class="visually-hidden">
            Definition of version {result.a} (left) and version {result.b} (right); changed lines are marked
          </caption>
          <thead>
            <tr>
              <th scope="col">Version {result.a}</th>
              <th scope="col">Version {result.b}</th>
            </tr>
          </thead>
          <tbody>
            {result.rows.map((r, i) => (
              <tr key={i} class={r.change}>
                <td class={r.change === 'same' ? '' : 'del'}>
                  {r.change !== 'same' && r.left !== undefined && <span class="visually-hidden">removed: </span>}
                  <code>{r.left ?? ''}</code>
                </td>
                <td class={r.change === 'same' ? '' : 'ins'}>
                  {r.change !== 'same' && r.right !== undefined && <span class="visually-hidden">added: </span>}
                  <code>{r.right ?? ''}</code>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
