import { guardBearerAuth } from '../../http/support.js';
import { createAppServer } from './createAppServer.js';
import { deleteAppServer } from './deleteAppServer.js';
import { getAppServer } from './getAppServer.js';
import { listAppServers } from './listAppServers.js';
import { updateAppServer } from './updateAppServer.js';
import { postMcpMessage } from './postMcpMessage.js';

/** Handlers of the application server operations in openapi/management.yaml (Handler<operationId> each). */
export const appServerHandlers = guardBearerAuth({
  listAppServers,
  createAppServer,
  getAppServer,
  updateAppServer,
  deleteAppServer,
});

/** The JSON-RPC endpoint of every tool server (openapi/gateway.yaml). */
export const gatewayHandlers = guardBearerAuth({ postMcpMessage });
