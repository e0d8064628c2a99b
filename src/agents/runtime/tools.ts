/**
 * The tools an agent's model may call: exactly those its `servers` allow (each server with all
 * of its tools, or an allow-list), called in-process through the gateway catalogue as the
 * agent's organisation — the same auth, PCID rules, upstream sessions, header forwarding and
 * result shapes as `{mcp_url}/<server>` (spec sections 5, 7). A server that cannot be listed
 * (upstream down, no matching connection) contributes no tools and no error, as spec section 5
 * prescribes for forwarding conditions; a tool's failure is fed back to the model as its
 * result, so it can recover.
 *
 * Granting `gateway` grants `gateway_invoke`, which reaches every tool of the organisation:
 * that is its purpose (spec section 9); grant single servers to confine an agent.
 */
import { createHash } from 'node:crypto';
import { dynamicTool, jsonSchema, type ToolSet } from 'ai';
import type { GatewayContext, ToolServer, CallResult, ToolDef } from '../../gateway/index.js';
import type { ServerRef } from '../agents.js';

/** Provider tool names: 1–64 of [A-Za-z0-9_-] (OpenAI, Anthropic and Google all accept these). */
const NAME_OK = /^[A-Za-z0-9_-]{1,64}$/;

export interface ToolTarget {
  server: string;
  tool: string;
}

export interface ToolEvents {
  onToolStart?(e: { toolCallId: string; server: string; tool: string }): void;
  onToolEnd?(e: { toolCallId: string; server: string; tool: string; isError: boolean; durationMs: number }): void;
  /** Images and embedded resources in a result become chat files (chat_list_artifacts). */
  onFile?(file: { fileName: string; mimeType: string; data: Buffer }): Promise<string | undefined>;
}

function safeName(raw: string): string {
  const cleaned = raw.replace(/[^A-Za-z0-9_-]/g, '_');
  if (NAME_OK.test(cleaned)) return cleaned;
  const hash = createHash('sha256').update(raw).digest('hex').slice(0, 8);
  return `${cleaned.slice(0, 55)}_${hash}`;
}

function textOf(result: CallResult): string {
  return result.content
    .filter((c) => c.type === 'text' && typeof c.text === 'string')
    .map((c) => c.text as string)
    .join('\n');
}

const EXT: Record<string, string> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'audio/wav': 'wav',
  'audio/mpeg': 'mp3',
  'application/pdf': 'pdf',
  'text/plain': 'txt',
  'application/json': 'json',
};

/** Binary content blocks are saved as chat files; the model gets a short note instead of base64. */
async function keepFiles(result: CallResult, events: ToolEvents, tool: string): Promise<string[]> {
  const notes: string[] = [];
  if (!events.onFile) return notes;
  let n = 0;
  for (const block of result.content) {
    let data: string | undefined;
    let mimeType = 'application/octet-stream';
    let fileName: string | undefined;
    if ((block.type === 'image' || block.type === 'audio') && typeof block.data === 'string') {
      data = block.data;
      mimeType = typeof block.mimeType === 'string' ? block.mimeType : mimeType;
    } else if (block.type === 'resource' && block.resource && typeof block.resource === 'object') {
      const r = block.resource as { uri?: unknown; mimeType?: unknown; blob?: unknown };
      if (typeof r.blob !== 'string') continue;
      data = r.blob;
      mimeType = typeof r.mimeType === 'string' ? r.mimeType : mimeType;
      if (typeof r.uri === 'string') fileName = r.uri.split(/[/\\]/).pop() || undefined;
    }
    if (data === undefined) continue;
    n++;
    fileName ??= `${tool.slice(0, 60)}-${n}.${EXT[mimeType] ?? 'bin'}`;
    const id = await events.onFile({ fileName, mimeType, data: Buffer.from(data, 'base64') });
    if (id) notes.push(`[${block.type} saved as chat file ${fileName} (${mimeType})]`);
  }
  return notes;
}

/** What the model reads back: the structured result (spec section 7: preferred) or the text. */
async function modelOutput(result: CallResult, events: ToolEvents, tool: string): Promise<unknown> {
  const notes = await keepFiles(result, events, tool);
  const text = textOf(result);
  if (result.isError) return { isError: true, error: text || JSON.stringify(result.structuredContent ?? {}) };
  if (result.structuredContent)
    return notes.length ? { ...result.structuredContent, _files: notes } : result.structuredContent;
  return [text, ...notes].filter(Boolean).join('\n');
}

function allowed(ref: ServerRef, def: ToolDef): boolean {
  return !ref.tools || ref.tools.includes(def.name);
}

/**
 * Lists the agent's servers and builds the SDK tool set. Names are the tools' own names when
 * unique within the agent (embedded tool names carry their server prefix already), else
 * `<server>__<tool>`; `targets` maps each back.
 */
export async function agentTools(
  ctx: GatewayContext,
  servers: ServerRef[],
  resolve: (ctx: GatewayContext, path: string) => Promise<ToolServer | undefined>,
  events: ToolEvents = {},
): Promise<{ tools: ToolSet; targets: Map<string, ToolTarget> }> {
  const listed = await Promise.all(
    servers.map(async (ref) => {
      const server = await resolve(ctx, ref.server);
      if (!server) return { ref, server: undefined, defs: [] as ToolDef[] };
      try {
        return { ref, server, defs: (await server.listTools(ctx)).filter((d) => allowed(ref, d)) };
      } catch (err) {
        ctx.log.warn(
          { server: ref.server, err: (err as Error).message },
          'agent tools: a server could not be listed; its tools are left out of this turn',
        );
        return { ref, server, defs: [] as ToolDef[] };
      }
    }),
  );
  const counts = new Map<string, number>();
  for (const l of listed) for (const d of l.defs) counts.set(d.name, (counts.get(d.name) ?? 0) + 1);
  const tools: ToolSet = {};
  const targets = new Map<string, ToolTarget>();
  for (const { server, defs } of listed) {
    if (!server) continue;
    for (const def of defs) {
      let name = safeName(counts.get(def.name) === 1 ? def.name : `${server.path}__${def.name}`);
      while (targets.has(name)) name = safeName(`${name}_`);
      targets.set(name, { server: server.path, tool: def.name });
      tools[name] = dynamicTool({
        description: `${def.description}${server.embedded ? '' : ` (server ${server.name})`}`.slice(0, 4000),
        inputSchema: jsonSchema(def.inputSchema as Parameters<typeof jsonSchema>[0]),
        execute: async (input, { toolCallId, abortSignal }) => {
          const started = performance.now();
          events.onToolStart?.({ toolCallId, server: server.path, tool: def.name });
          let isError = true;
          try {
            const callCtx: GatewayContext = abortSignal
              ? { ...ctx, signal: AbortSignal.any([ctx.signal, abortSignal]) }
              : ctx;
            const args =
              input && typeof input === 'object' && !Array.isArray(input) ? (input as Record<string, unknown>) : {};
            const result = await server.callTool(callCtx, def.name, args);
            isError = Boolean(result.isError);
            return await modelOutput(result, events, def.name);
          } finally {
            events.onToolEnd?.({
              toolCallId,
              server: server.path,
              tool: def.name,
              isError,
              durationMs: Math.round(performance.now() - started),
            });
          }
        },
      });
    }
  }
  return { tools, targets };
}
