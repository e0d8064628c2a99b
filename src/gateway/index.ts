/**
 * Gateway context public surface. Foundation scope: application server registrations.
 * The JSON-RPC router, upstream client pool and header forwarding arrive with a later issue.
 */
export {
  createAppServer,
  getAppServer,
  findAppServerByPath,
  listAppServers,
  updateAppServer,
  deleteAppServer,
  type AppServer,
  type AppServerCreate,
  type AppServerPatch,
} from './registry.js';
export {
  EMBEDDED_PATHS,
  SERVER_PATH_PATTERN,
  type Upstream,
  type McpUpstream,
  type OpenapiUpstream,
  type UpstreamAuth,
  type AuthScheme,
} from './registry-validate.js';
export { appServerHandlers } from './handlers/index.js';
