/**
 * The scripted OpenAI-compatible model server (test/helpers/model-server.ts) for the channel
 * and browser benchmarks: it answers at once. A user message `tools:<n>` makes it call `gateway_invoke`
 * (mcp/listServers, the cheapest embedded tool) n times, one per step, before it answers.
 * A browser operator request (its tools include `done`) is answered from the page it shows,
 * for the bench's form page: fill "Name", click "Send", extract the status, then done quoting it.
 * Prints `{url}` (the base URL for OPENAI_COMPATIBLE_BASE_URL) on its first stdout line.
 */
import { writeFileSync } from 'node:fs';
import { startModelServer, reply } from '../../test/helpers/model-server.js';

/** BENCH_CAPTURE: where to write the first plain request's body, so the benchmark can time the model alone on exactly what a turn sends. */
let captured = !process.env.BENCH_CAPTURE;

/** The ref of the first snapshot line matching `pattern`. */
function ref(view: string, pattern: RegExp): string {
  const line = view.split('\n').find((l) => pattern.test(l) && l.includes('[ref='));
  return /\[ref=([a-z0-9]+)\]/.exec(line ?? '')?.[1] ?? 'e0';
}

function operator(messages: Array<{ role: string; content: unknown }>) {
  const last = [...messages].reverse().find((m) => m.role === 'user');
  const view = Array.isArray(last?.content)
    ? (last.content as Array<{ type: string; text?: string }>)
        .filter((p) => p.type === 'text')
        .map((p) => p.text)
        .join('\n')
    : String(last?.content ?? '');
  const done = (/Steps so far:\n([\s\S]*?)\n\n/.exec(view)?.[1] ?? '')
    .split('\n')
    .filter((l) => /^\d+\. /.test(l)).length;
  if (done === 0) return reply.toolCall('fill', { ref: ref(view, /textbox "Name"/), text: 'Ada' });
  if (done === 1) return reply.toolCall('click', { ref: ref(view, /button "Send"/) });
  if (done === 2) return reply.toolCall('extract', { ref: ref(view, /- status/) });
  const read = /: read [^\n]*?: ("(?:[^"\\]|\\.)*")/.exec(view)?.[1];
  return reply.toolCall('done', { result: `Answer: ${read ? (JSON.parse(read) as string) : ''}` });
}

const model = await startModelServer((req) => {
  if (req.tools.some((t: { function?: { name?: string } }) => t.function?.name === 'done'))
    return operator(req.messages);
  const lastUser = [...req.messages].reverse().find((m: { role: string }) => m.role === 'user') as
    { content: unknown } | undefined;
  const text = typeof lastUser?.content === 'string' ? lastUser.content : '';
  const wanted = /^tools:(\d+)$/.exec(text);
  const lastUserIndex = req.messages.lastIndexOf(lastUser);
  const done = req.messages.slice(lastUserIndex).filter((m: { role: string }) => m.role === 'tool').length;
  if (!captured && text === 'hi') {
    captured = true;
    writeFileSync(process.env.BENCH_CAPTURE!, JSON.stringify(req.body));
  }
  if (wanted && done < Number(wanted[1]))
    return reply.toolCall('gateway_invoke', { server: 'mcp', tool: 'listServers', arguments: {} });
  return reply.text('ok');
});
// Keep the recorded requests from growing for the whole run.
setInterval(() => {
  model.requests.length = 0;
}, 1000).unref();
process.stdout.write(JSON.stringify({ url: model.baseUrl }) + '\n');
process.on('SIGTERM', () => void model.close().then(() => process.exit(0)));
