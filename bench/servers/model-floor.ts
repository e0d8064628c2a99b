/**
 * The floor of any channel built on the AI SDK: a bare node:http server that sends each
 * request's `message` to the scripted model and answers its text, with nothing else (no
 * auth, no store, no tools). FLOOR_MODE picks the client:
 * - `ai-sdk`: `generateText` through `@ai-sdk/openai-compatible`, as the channel's runtime does;
 * - `http`: one raw node:http request on a keep-alive agent (the transport alone).
 * MODEL_URL is the scripted model's base URL. Prints `{url}` on its first stdout line.
 */
import http from 'node:http';
import { generateText } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';

const base = process.env.MODEL_URL!;
const mode = process.env.FLOOR_MODE ?? 'ai-sdk';
const model = createOpenAICompatible({ name: 'floor', baseURL: base }).chatModel('bench');
const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const system = 'You are a helpful assistant.';

function viaHttp(message: string): Promise<string> {
  const body = JSON.stringify({
    model: 'bench',
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: message },
    ],
  });
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${base}/chat/completions`,
      {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve(
            (JSON.parse(text) as { choices: Array<{ message: { content: string } }> }).choices[0]!.message.content,
          ),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const server = http.createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => (body += chunk));
  req.on('end', () => {
    const { message } = JSON.parse(body) as { message: string };
    const answer =
      mode === 'http'
        ? viaHttp(message)
        : generateText({ model, system, messages: [{ role: 'user', content: message }] }).then((r) => r.text);
    answer.then(
      (text) => res.writeHead(200, { 'content-type': 'text/plain' }).end(text),
      (err: Error) => res.writeHead(502, { 'content-type': 'text/plain' }).end(err.message),
    );
  });
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${port}` }) + '\n');
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
