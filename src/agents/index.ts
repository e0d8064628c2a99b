/**
 * Agents context public surface (other contexts import only from here): agent records and releases, chats and
 * their history, the turn runtime (model providers, tools through the gateway) and the agent
 * API channel. See README.md.
 */
export {
  createAgent,
  getAgent,
  requireAgent,
  listAgents,
  updateAgent,
  deleteAgent,
  publishRelease,
  setPublicTemplate,
  runnableConfig,
  configOf,
  AGENT_ID_PATTERN,
  type AgentRecord,
  type AgentConfig,
  type AgentCreate,
  type AgentPatch,
  type ServerRef,
} from './agents.js';
export {
  createChat,
  getChat,
  listChats,
  resetChat,
  loadHistory,
  listChatFiles,
  getTurn,
  failAbandonedTurns,
  CHAT_ID_PATTERN,
  type ChatRecord,
  type TurnRecord,
} from './chats.js';
export {
  AgentConfigError,
  checkAgentConfig,
  checkModel,
  checkOutputSchema,
  checkServers,
  MODEL_PATTERN,
} from './validate.js';
export { AgentService, type AgentEvent, type InvokeRequest, type Invocation, type TurnOutcome } from './service.js';
export { resolveModel } from './runtime/providers.js';
export { authoriseChannel, serveChannel } from './channel-call.js';
export { isChannelId, CHANNEL_ID_PATTERN, type ChannelRecord, type OutputFormat } from './channels.js';
export { agentInvoker } from './step-invoker.js';
export { createChatOrder } from './chat-order.js';
export {
  createChannel,
  getChannel,
  channelEtag,
  channelView,
  deleteChannel,
  listChannels,
  requireChannel,
  rotateChannelKey,
  updateChannel,
  OUTPUT_FORMATS,
} from './channels.js';
