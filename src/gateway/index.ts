/**
 * Gateway context public surface. Foundation scope: application server registrations.
 * The JSON-RPC router, upstream client pool and header forwarding arrive with a later issue.
 */
export {
  createAppServer,
  getAppServer,
  findAppServerByPath,
  allAppServers,
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
  type CodingAgentUpstream,
  type UpstreamAuth,
  type AuthScheme,
} from './registry-validate.js';
export { appServerHandlers, gatewayHandlers } from './handlers/index.js';
export { createGateway, type Gateway, type GatewayOptions } from './gateway.js';
export { toolCaller, type ToolCallerDeps } from './steps.js';
export {
  GatewayError,
  RPC,
  jsonResult,
  toolError,
  type ToolServer,
  type ToolDef,
  type CallResult,
  type GatewayContext,
  type GatewayServices,
} from './types.js';
