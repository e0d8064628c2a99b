/**
 * Gateway: the tool servers the organisation sees (embedded and application servers, from the
 * gateway's `listServers`, with the upstream health of application servers from GET /v1/servers), a server's tools with their input schemas (`tools/list`), and a
 * discovery playground (`capabilities_discover` of svc-sidekick): the tools ranked for a
 * request, with their confidence and the description they were matched on.
 */
import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { callTool, listTools } from '../mcp.ts';
import { Empty, ErrorBox, Loading, PageTitle, Show, useApi } from '../ui.tsx';
import { appServers, HealthCell } from '../server-health.tsx';

interface ServerEntry {
  name: string;
  path: string;
  description?: string;
  embedded: boolean;
  tools: string[];
}

interface Discovered {
  tools: { name: string; serverName: string; hasSkill: boolean; confidence: number; description?: string }[];
}

function Tools({ path }: { path: string }) {
  const state = useApi(() => listTools(path), [path]);
  return (
    <Show state={state} what={`the tools of ${path}`}>
      {(tools) =>
        tools.length === 0 ? (
          <p class="muted">This server offers no tool to this organisation.</p>
        ) : (
          <ul class="tools">
            {tools.map((t) => (
              <li key={t.name}>
                <details>
                  <summary>
                    <code>{t.name}</code> <span class="muted">{t.description}</span>
                  </summary>
                  <pre class="json">{JSON.stringify(t.inputSchema ?? {}, null, 2)}</pre>
                </details>
              </li>
            ))}
          </ul>
        )
      }
    </Show>
  );
}

function Discovery() {
  const [result, setResult] = useState<Discovered>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  return (
    <>
      <form
        class="inline-form"
        aria-label="Discover tools"
        onSubmit={async (e) => {
          e.preventDefault();
          const request = String(new FormData(e.currentTarget).get('request') ?? '').trim();
          setBusy(true);
          setError(undefined);
          try {
            setResult(
              await callTool<Discovered>('svc-sidekick', 'capabilities_discover', { request, types: ['tool'] }),
            );
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <div class="field">
          <label for="disc-request">What should a tool do?</label>
          <input id="disc-request" name="request" required placeholder="e.g. take a screenshot of a web page" />
        </div>
        <button type="submit" class="primary" disabled={busy}>
          Discover
        </button>
      </form>
      <div aria-live="polite">
        {busy && <Loading what="the ranked tools" />}
        {error !== undefined && <ErrorBox error={error} title="Discovery failed" />}
        {result &&
          (result.tools.length === 0 ? (
            <Empty title="No tool matches this request.">Describe the task differently, or add a server.</Empty>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Rank</th>
                  <th scope="col">Tool</th>
                  <th scope="col">Server</th>
                  <th scope="col">Confidence</th>
                  <th scope="col">Matched description</th>
                </tr>
              </thead>
              <tbody>
                {result.tools.map((t, i) => (
                  <tr key={`${t.serverName}/${t.name}`}>
                    <td>{i + 1}</td>
                    <td>
                      <code>{t.name}</code>
                      {t.hasSkill && <span class="badge">skill</span>}
                    </td>
                    <td>{t.serverName}</td>
                    <td>
                      <meter min={0} max={1} value={t.confidence} aria-label={`Confidence of ${t.name}`} />{' '}
                      {t.confidence.toFixed(2)}
                    </td>
                    <td class="wrap">{t.description ?? ''}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ))}
      </div>
    </>
  );
}

export function GatewayPage() {
  const servers = useApi(() => callTool<{ servers: ServerEntry[] }>('mcp', 'listServers', {}), []);
  // Read after listServers answered, so the health reflects the listing it just made.
  const registered = useApi(async () => (servers.data ? appServers() : []), [servers.data]);
  const health = new Map((registered.data ?? []).map((r) => [r.path, r.health]));
  const [open, setOpen] = useState<string>();
  return (
    <>
      <PageTitle>Gateway</PageTitle>
      <section aria-labelledby="gw-discovery">
        <h2 id="gw-discovery">Discovery playground</h2>
        <Discovery />
      </section>
      <section aria-labelledby="gw-servers">
        <h2 id="gw-servers">Tool servers</h2>
        <Show state={servers} what="the tool servers">
          {({ servers: list }) =>
            list.length === 0 ? (
              <Empty title="No tool servers.">Register an application server with POST /v1/servers.</Empty>
            ) : (
              <table>
                <thead>
                  <tr>
                    <th scope="col">Server</th>
                    <th scope="col">Path</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Upstream</th>
                    <th scope="col">Tools</th>
                  </tr>
                </thead>
                <tbody>
                  {list.map((s) => (
                    <Fragment key={s.path}>
                      <tr>
                        <td>
                          {s.name}
                          <div class="muted small-text">{s.description}</div>
                        </td>
                        <td>
                          <code>/mcp/{s.path}</code>
                        </td>
                        <td>{s.embedded ? 'embedded' : 'application'}</td>
                        <td>{health.has(s.path) ? <HealthCell health={health.get(s.path)!} /> : '—'}</td>
                        <td>
                          <button
                            type="button"
                            class="small"
                            aria-expanded={open === s.path}
                            onClick={() => setOpen(open === s.path ? undefined : s.path)}
                          >
                            {open === s.path ? 'Hide' : 'Show'} {s.tools.length} tools
                            <span class="visually-hidden"> of {s.name}</span>
                          </button>
                        </td>
                      </tr>
                      {open === s.path && (
                        <tr>
                          <td colSpan={5}>
                            <Tools path={s.path} />
                          </td>
                        </tr>
                      )}
                    </Fragment>
                  ))}
                </tbody>
              </table>
            )
          }
        </Show>
      </section>
    </>
  );
}
