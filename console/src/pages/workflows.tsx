/** Workflows & triggers: every workflow at its current version, with its triggers. */
import { api, unwrap } from '../api.ts';
import { Link } from '../router.tsx';
import { Empty, PageTitle, Show, Time, useApi } from '../ui.tsx';

async function load() {
  const [workflows, triggers] = await Promise.all([
    unwrap(api.GET('/v1/workflows', { params: { query: { limit: 200 } } })),
    unwrap(api.GET('/v1/triggers', { params: { query: { limit: 200 } } })),
  ]);
  const count = new Map<string, number>();
  for (const t of triggers.items) count.set(t.automationId, (count.get(t.automationId) ?? 0) + 1);
  return { workflows: workflows.items, more: workflows.nextCursor !== null, count };
}

export function WorkflowsPage() {
  const state = useApi(load, []);
  return (
    <>
      <PageTitle>Workflows &amp; triggers</PageTitle>
      <p>
        <Link to="/workflows/new" class="button">
          New workflow
        </Link>
      </p>
      <Show state={state} what="the workflows">
        {({ workflows, more, count }) =>
          workflows.length === 0 ? (
            <Empty title="No workflows yet.">
              Create one here (New workflow), deploy one with <code>switchyard workflow deploy workflow.json</code> or{' '}
              <code>POST /v1/workflows</code>, then add a trigger to it (<code>POST /v1/triggers</code>).
            </Empty>
          ) : (
            <>
              <table>
                <thead>
                  <tr>
                    <th scope="col">Workflow</th>
                    <th scope="col">Version</th>
                    <th scope="col">Steps</th>
                    <th scope="col">Triggers</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {workflows.map((w) => (
                    <tr key={w.automationId}>
                      <td>
                        <Link to={`/workflows/${w.automationId}`}>{w.name}</Link>
                        <div class="muted small-text">{w.automationId}</div>
                      </td>
                      <td>{w.version}</td>
                      <td>{w.definition.steps.length}</td>
                      <td>{count.get(w.automationId) ?? 0}</td>
                      <td>
                        <Time iso={w.updatedAt} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              {more && <p class="muted">Showing the first {workflows.length} workflows.</p>}
            </>
          )
        }
      </Show>
    </>
  );
}
