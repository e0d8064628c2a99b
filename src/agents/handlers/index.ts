import { guardBearerAuth } from '../../http/support.js';
import { createAgent } from './createAgent.js';
import { deleteAgent } from './deleteAgent.js';
import { getAgent } from './getAgent.js';
import { listAgents } from './listAgents.js';
import { updateAgent } from './updateAgent.js';
import { createChannel } from './createChannel.js';
import { deleteChannel } from './deleteChannel.js';
import { getChannel } from './getChannel.js';
import { listChannels } from './listChannels.js';
import { rotateChannelKey } from './rotateChannelKey.js';
import { listChats } from './listChats.js';
import { getChat } from './getChat.js';
import { updateChannel } from './updateChannel.js';

/** Handlers of the agent management operations in openapi/management.yaml (Handler<operationId> each). */
export const agentHandlers = guardBearerAuth({
  listAgents,
  createAgent,
  getAgent,
  updateAgent,
  deleteAgent,
});

/** Handlers of the agent API channel management operations (the channel call itself is served elsewhere). */
export const channelHandlers = guardBearerAuth({
  listChannels,
  createChannel,
  getChannel,
  updateChannel,
  deleteChannel,
  rotateChannelKey,
});

/** Handlers of the chat reads (transcripts with their tool calls; src/agents/transcript.ts). */
export const chatHandlers = guardBearerAuth({
  listChats,
  getChat,
});
export { sendChannelMessage } from '../channel-call.js';
