import type { Services } from '../../services.js';
import { listingHealth } from '../upstream/index.js';

/**
 * Registrations as the management API answers them: with `health`, how this process last listed
 * their tools (openapi/management.yaml `AppServerHealth`).
 */
export function withHealth<T extends { serverId: string; version: number }>(
  services: Pick<Services, 'gateway'>,
  orgId: string,
  servers: T[],
) {
  const health = listingHealth(services.gateway.pool, orgId, servers);
  return servers.map((server, i) => ({ ...server, health: health[i]! }));
}
