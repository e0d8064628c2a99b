/**
 * Connections context public surface: connection records (PCID), their encrypted secrets
 * and the spec section 10 listing.
 */
export {
  createConnection,
  findConnectionRow,
  getConnection,
  listConnections,
  listUserConnections,
  connectionsStamp,
  updateConnection,
  deleteConnection,
  decryptConnectionSecret,
  SERVICE_KEY_PATTERN,
  type Connection,
  type ConnectionCreate,
  type ConnectionPatch,
  type ConnectionFilter,
  type ConnectionRow,
  type ConnectionSecret,
  type UserConnection,
} from './connections.js';
export { CONNECTION_STATUSES, isConnectionStatus, parseStatuses, type ConnectionStatus } from './statuses.js';
