/**
 * The scripted OpenAI-compatible model server (test/helpers/model-server.ts) for the channel
 * benchmark: it answers at once. A user message `tools:<n>` makes it call `gateway_invoke`
 * (mcp/listServers, the cheapest embedded tool) n times, one per step, before it answers.
 * Prints `{url}` (the base URL for OPENAI_COMPATIBLE_BASE_URL) on its first stdout line.
 */
import { writeFileSync } from 'node:fs';
import { startModelServer, reply } from '../../test/helpers/model-server.js';

/** BENCH_CAPTURE: where to write the first plain request's body, so the benchmark can time the model alone on exactly what a turn sends. */
let captured = !process.env.BENCH_CAPTURE;

const model = await startModelServer((req) => {
  const lastUser = [...req.messages].reverse().find((m: { role: string }) => m.role === 'user') as { content: unknown } | undefined;
  const text = typeof lastUser?.content === 'string' ? lastUser.content : '';
  const wanted = /^tools:(\d+)$/.exec(text);
  const lastUserIndex = req.messages.lastIndexOf(lastUser);
  const done = req.messages.slice(lastUserIndex).filter((m: { role: string }) => m.role === 'tool').length;
  if (!captured && text === 'hi') {
    captured = true;
    writeFileSync(process.env.BENCH_CAPTURE!, JSON.stringify(req.body));
  }
  if (wanted && done < Number(wanted[1])) return reply.toolCall('gateway_invoke', { server: 'mcp', tool: 'listServers', arguments: {} });
  return reply.text('ok');
});
// Keep the recorded requests from growing for the whole run.
setInterval(() => { model.requests.length = 0; }, 1000).unref();
process.stdout.write(JSON.stringify({ url: model.baseUrl }) + '\n');
process.on('SIGTERM', () => void model.close().then(() => process.exit(0)));
