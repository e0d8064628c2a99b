import type { Services } from '../../services.js';
import { listingHealth } from '../upstream/index.js';

/**
 * A registration as the management API answers it: with `health`, how this process last listed
 * its tools (openapi/management.yaml `AppServerHealth`).
 */
export function withHealth<T extends { serverId: string; version: number }>(
  services: Pick<Services, 'gateway'>,
  orgId: string,
  server: T,
) {
  return { ...server, health: listingHealth(services.gateway.pool, orgId, server) };
}
