/**
 * The upstream health of application servers (`health` of GET /v1/servers): how the answering
 * process last listed each server's tools. Shared by the Overview and Gateway pages.
 */
import { api, unwrap } from './api.ts';
import { Time } from './ui.tsx';
import type { AppServer, AppServerHealth } from '../../generated/openapi/client.ts';

/** Every application server of the organisation (pages of 200; an organisation registers a handful). */
export async function appServers(): Promise<AppServer[]> {
  const all: AppServer[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 10; page++) {
    const data = await unwrap(api.GET('/v1/servers', { params: { query: { limit: 200, cursor } } }));
    all.push(...data.items);
    if (!data.nextCursor) break;
    cursor = data.nextCursor;
  }
  return all;
}

const LABEL: Record<AppServerHealth['status'], string> = {
  unknown: 'not listed yet',
  fresh: 'fresh',
  stale: 'stale',
  failing: 'failing',
};

export function HealthBadge({ health }: { health: AppServerHealth }) {
  return (
    <span class={`badge health-${health.status}`}>
      <span class="visually-hidden">Upstream </span>
      {LABEL[health.status]}
    </span>
  );
}

/** Status, last listing and last error of one server, for a table cell. */
export function HealthCell({ health }: { health: AppServerHealth }) {
  return (
    <>
      <HealthBadge health={health} />
      {health.lastListedAt && (
        <div class="muted small-text">
          listed <Time iso={health.lastListedAt} />
        </div>
      )}
      {health.lastError && <div class="wrap small-text">{health.lastError}</div>}
    </>
  );
}
