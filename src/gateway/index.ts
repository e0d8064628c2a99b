/**
 * Gateway context public surface: application server registrations, the gateway (JSON-RPC router,
 * catalogue, upstream pool) and its handlers, and the tool caller of workflow steps.
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
export {
  createGateway,
  type Gateway,
  type GatewayOptions,
  type GatewayParts,
  type GatewayUsage,
  type EmbeddedMount,
  type UnmountedGateway,
} from './gateway.js';
export type { GatewayCatalog } from './catalog.js';
export { toolCaller, type ToolCallerDeps } from './steps.js';
export {
  GatewayError,
  RPC,
  jsonResult,
  toolError,
  type JsonResult,
  type ToolServer,
  type ToolDef,
  type CallResult,
  type GatewayContext,
  type GatewayServices,
} from './types.js';
export { forwardedHeaders } from './upstream/forwarding.js';
export { embeddedServer, checkWith, toolDefsOf, type EmbeddedServerOptions } from './embedded.js';
export type {
  ToolCallObserver,
  CatalogConnection,
  CatalogResource,
  CatalogTool,
  DiscoverySource,
  JsonSchemaObject,
} from './types.js';
