/**
 * Embedded server `agent-management` (spec section 11): the eleven `agent-management_*` tools
 * over the agents context, as schemas/tools/agent-management describes them. Arguments are
 * validated before a tool runs (-32000); a configuration the schemas cannot judge (unknown
 * server path, bad output schema) is a validation error too, naming the field; an unknown
 * agent or chat is the tool's own failure (`isError: true`). `agent_invoke` answers
 * `{success, response, chatId, agentId}`; a turn that fails after its chat exists answers
 * `success: false` with the reason in `response`.
 */
import { AppError, isAppError } from '../../errors/index.js';
import {
  GatewayError,
  RPC,
  jsonResult,
  toolError,
  type GatewayContext,
  type ToolServer,
  embeddedServer,
  type GatewayCatalog,
} from '../../gateway/index.js';
import {
  AgentConfigError,
  checkAgentConfig,
  createAgent,
  createChat,
  getChat,
  listAgents,
  listChatFiles,
  listChats,
  publishRelease,
  requireAgent,
  setPublicTemplate,
  updateAgent,
  type AgentService,
} from '../../agents/index.js';
import { signFileUrl, STEP_FILE_URL_TTL_SECONDS } from '../../files/index.js';
import type { AgentManagementHandlers } from '../../../generated/tools/servers.js';

/**
 * What the tools reach beyond the call's context: the catalogue (server paths of an agent's
 * configuration are checked against it) and the agent turns. The composition root builds this
 * server after the agent service, and mounts it in the gateway the agents' turns call tools through.
 */
export interface AgentManagementDeps {
  catalog: Pick<GatewayCatalog, 'resolve'>;
  agents: Pick<AgentService, 'start' | 'reset'>;
}

async function checked(
  ctx: GatewayContext,
  deps: AgentManagementDeps,
  input: Parameters<typeof checkAgentConfig>[2],
): Promise<void> {
  try {
    await checkAgentConfig({ ...ctx.services, gateway: { catalog: deps.catalog } }, ctx.orgId, input);
  } catch (err) {
    if (err instanceof AgentConfigError) {
      throw new GatewayError(RPC.SERVER, `Invalid arguments: \`${err.field}\` ${err.message}`, {
        error: 'invalid_arguments',
        errors: [{ field: err.field, message: err.message }],
      });
    }
    throw err;
  }
}

async function chatOf(ctx: GatewayContext, chatId: string): Promise<NonNullable<Awaited<ReturnType<typeof getChat>>>> {
  const chat = await getChat(ctx.services.db, ctx.orgId, chatId);
  if (!chat) throw new AppError('ERR_NOT_FOUND', { message: `No chat ${chatId} in this organisation` });
  return chat;
}

/** The eleven tools, each typed from its schemas (generated/tools/servers.ts). */
function handlers(deps: AgentManagementDeps): AgentManagementHandlers<GatewayContext> {
  return {
    async 'agent-management_agent_create'(args, ctx) {
      await checked(ctx, deps, args);
      return jsonResult({ ...(await createAgent(ctx.services.db, ctx.orgId, args)) });
    },
    async 'agent-management_agent_list'(args, ctx) {
      const page = await listAgents(ctx.services.db, ctx.orgId, { limit: args.limit ?? 20, cursor: args.cursor });
      return jsonResult({ agents: page.agents, nextCursor: page.nextCursor });
    },
    async 'agent-management_agent_read'(args, ctx) {
      return jsonResult({ ...(await requireAgent(ctx.services.db, ctx.orgId, args.agentId)) });
    },
    async 'agent-management_agent_update'(args, ctx) {
      const { agentId, ...patch } = args;
      await requireAgent(ctx.services.db, ctx.orgId, agentId);
      await checked(ctx, deps, patch);
      return jsonResult({ ...(await updateAgent(ctx.services.db, ctx.orgId, agentId, patch)) });
    },
    async 'agent-management_agent_invoke'(args, ctx) {
      const inv = await deps.agents.start({
        orgId: ctx.orgId,
        agentId: args.agentId,
        message: args.message,
        chatId: args.chatId,
        forwardedHeaders: {},
      });
      const outcome = await inv.done;
      return jsonResult({
        success: outcome.ok,
        response: outcome.ok ? outcome.reply : outcome.error.message,
        chatId: inv.chatId,
        agentId: args.agentId,
      });
    },
    async 'agent-management_chat_create'(args, ctx) {
      const agent = await requireAgent(ctx.services.db, ctx.orgId, args.agentId);
      const chat = await createChat(ctx.services.db, {
        orgId: ctx.orgId,
        agentId: agent.agentId,
        title: args.title ?? null,
      });
      return jsonResult({
        chatId: chat.chatId,
        agentId: chat.agentId,
        title: chat.title,
        createdAt: chat.createdAt,
        updatedAt: chat.updatedAt,
        introMessage: agent.introMessage,
      });
    },
    async 'agent-management_chat_list'(args, ctx) {
      const page = await listChats(ctx.services.db, ctx.orgId, {
        agentId: args.agentId,
        limit: args.limit ?? 20,
        cursor: args.cursor,
      });
      return jsonResult({
        chats: page.chats.map((c) => ({
          chatId: c.chatId,
          agentId: c.agentId,
          title: c.title,
          createdAt: c.createdAt,
          updatedAt: c.updatedAt,
        })),
        nextCursor: page.nextCursor,
      });
    },
    async 'agent-management_chat_reset_conversation'(args, ctx) {
      const chat = await chatOf(ctx, args.chatId);
      await deps.agents.reset(ctx.orgId, chat.chatId);
      return jsonResult({ success: true, chatId: chat.chatId });
    },
    async 'agent-management_chat_list_artifacts'(args, ctx) {
      const chat = await chatOf(ctx, args.chatId);
      const files = await listChatFiles(ctx.services.db, ctx.orgId, chat.chatId);
      return jsonResult({
        chatId: chat.chatId,
        files: files.map((f) => ({
          url: signFileUrl(ctx.services.config, f.id, STEP_FILE_URL_TTL_SECONDS),
          fileName: f.filename,
          mimeType: f.mimeType,
          size: f.size,
        })),
      });
    },
    async 'agent-management_agent_publish_release'(args, ctx) {
      return jsonResult(await publishRelease(ctx.services.db, ctx.orgId, args.agentId, args.notes));
    },
    async 'agent-management_agent_toggle_public_template'(args, ctx) {
      const agent = await setPublicTemplate(ctx.services.db, ctx.orgId, args.agentId, { isPublic: args.public });
      return jsonResult({
        agentId: agent.agentId,
        isPublicTemplate: agent.isPublicTemplate,
        releaseVersion: agent.releaseVersion!,
      });
    },
  };
}

/** Refusals a caller can act on are the tool's own failure; anything else stays a protocol error. */
const TOOL_FAILURES = new Set([
  'ERR_NOT_FOUND',
  'ERR_AGENT_MODEL_NOT_CONFIGURED',
  'ERR_AGENT_PUBLIC_NEEDS_RELEASE',
  'ERR_INVALID_CURSOR',
  'ERR_CONFLICT',
]);

export function createAgentManagementServer(deps: AgentManagementDeps): ToolServer {
  return embeddedServer('agent-management', handlers(deps), {
    onError: (err) =>
      isAppError(err) && err.key !== undefined && TOOL_FAILURES.has(err.key)
        ? toolError(err.message, { code: err.code })
        : undefined,
  });
}
