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
  type CallResult,
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
  type AgentPatch,
  type AgentService,
  type ServerRef,
} from '../../agents/index.js';
import { signFileUrl, STEP_FILE_URL_TTL_SECONDS } from '../../runs/index.js';

const PREFIX = 'agent-management_';

/**
 * What the tools reach beyond the call's context: the catalogue (server paths of an agent's
 * configuration are checked against it) and the agent turns. The turns are late-bound: the agent
 * service is built after the gateway, since its turns call tools through this catalogue.
 */
export interface AgentManagementDeps {
  catalog: Pick<GatewayCatalog, 'resolve'>;
  agents: () => Pick<AgentService, 'start' | 'reset'>;
}

type Args = Record<string, unknown>;
type Tool = (ctx: GatewayContext, args: Args, deps: AgentManagementDeps) => Promise<CallResult>;

function str(args: Args, key: string): string | undefined {
  return typeof args[key] === 'string' ? (args[key] as string) : undefined;
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

const tools: Record<string, Tool> = {
  async agent_create(ctx, args, deps) {
    const input = args as {
      name: string;
      description?: string;
      instructions: string;
      servers?: ServerRef[];
      model?: string;
      outputSchema?: Record<string, unknown>;
      introMessage?: string;
    };
    await checked(ctx, deps, input);
    return jsonResult({ ...(await createAgent(ctx.services.db, ctx.orgId, input)) });
  },
  async agent_list(ctx, args) {
    const page = await listAgents(ctx.services.db, ctx.orgId, {
      limit: (args.limit as number | undefined) ?? 20,
      cursor: str(args, 'cursor'),
    });
    return jsonResult({ agents: page.agents, nextCursor: page.nextCursor });
  },
  async agent_read(ctx, args) {
    return jsonResult({ ...(await requireAgent(ctx.services.db, ctx.orgId, args.agentId as string)) });
  },
  async agent_update(ctx, args, deps) {
    const { agentId, ...patch } = args as AgentPatch & { agentId: string };
    await requireAgent(ctx.services.db, ctx.orgId, agentId);
    await checked(ctx, deps, patch);
    return jsonResult({ ...(await updateAgent(ctx.services.db, ctx.orgId, agentId, patch)) });
  },
  async agent_invoke(ctx, args, deps) {
    const agentId = args.agentId as string;
    const inv = await deps.agents().start({
      orgId: ctx.orgId,
      agentId,
      message: args.message as string,
      chatId: str(args, 'chatId'),
      forwardedHeaders: {},
    });
    const outcome = await inv.done;
    return jsonResult({
      success: outcome.ok,
      response: outcome.ok ? outcome.reply : outcome.error.message,
      chatId: inv.chatId,
      agentId,
    });
  },
  async chat_create(ctx, args) {
    const agent = await requireAgent(ctx.services.db, ctx.orgId, args.agentId as string);
    const chat = await createChat(ctx.services.db, {
      orgId: ctx.orgId,
      agentId: agent.agentId,
      title: str(args, 'title') ?? null,
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
  async chat_list(ctx, args) {
    const page = await listChats(ctx.services.db, ctx.orgId, {
      agentId: str(args, 'agentId'),
      limit: (args.limit as number | undefined) ?? 20,
      cursor: str(args, 'cursor'),
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
  async chat_reset_conversation(ctx, args, deps) {
    const chat = await chatOf(ctx, args.chatId as string);
    await deps.agents().reset(ctx.orgId, chat.chatId);
    return jsonResult({ success: true, chatId: chat.chatId });
  },
  async chat_list_artifacts(ctx, args) {
    const chat = await chatOf(ctx, args.chatId as string);
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
  async agent_publish_release(ctx, args) {
    return jsonResult(await publishRelease(ctx.services.db, ctx.orgId, args.agentId as string, str(args, 'notes')));
  },
  async agent_toggle_public_template(ctx, args) {
    const agent = await setPublicTemplate(ctx.services.db, ctx.orgId, args.agentId as string, {
      isPublic: args.public as boolean,
    });
    return jsonResult({
      agentId: agent.agentId,
      isPublicTemplate: agent.isPublicTemplate,
      releaseVersion: agent.releaseVersion!,
    });
  },
};

/** Refusals a caller can act on are the tool's own failure; anything else stays a protocol error. */
const TOOL_FAILURES = new Set([
  'ERR_NOT_FOUND',
  'ERR_AGENT_MODEL_NOT_CONFIGURED',
  'ERR_AGENT_PUBLIC_NEEDS_RELEASE',
  'ERR_INVALID_CURSOR',
  'ERR_CONFLICT',
]);

export function createAgentManagementServer(deps: AgentManagementDeps): ToolServer {
  return embeddedServer('agent-management', async (ctx, tool, args) => {
    const run = tools[tool.name.slice(PREFIX.length)];
    if (!run) throw new GatewayError(RPC.INTERNAL, `agent-management has no implementation of ${tool.name}`);
    try {
      return await run(ctx, args, deps);
    } catch (err) {
      if (isAppError(err) && err.key !== undefined && TOOL_FAILURES.has(err.key))
        return toolError(err.message, { code: err.code });
      throw err;
    }
  });
}
