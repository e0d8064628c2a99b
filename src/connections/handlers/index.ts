import { guardBearerAuth } from '../../http/support.js';
import { createConnection } from './createConnection.js';
import { deleteConnection } from './deleteConnection.js';
import { getConnection } from './getConnection.js';
import { listConnections } from './listConnections.js';
import { listUserConnections } from './listUserConnections.js';
import { updateConnection } from './updateConnection.js';

/**
 * Handlers of the connection operations: the management ones in openapi/management.yaml and
 * listUserConnections (spec section 10, GET /manage/user-connections); Handler<operationId> each.
 */
export const connectionHandlers = guardBearerAuth({
  listConnections,
  createConnection,
  getConnection,
  updateConnection,
  deleteConnection,
  listUserConnections,
});
