/**
 * A trigger-URL receiver for the events benchmark: answers every POST with 202 at once and
 * counts them; GET /count returns the count. Prints `{url}` on its first stdout line.
 */
import http from 'node:http';

let count = 0;
const server = http.createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ count }));
    return;
  }
  req.resume();
  req.on('end', () => {
    count++;
    res.writeHead(202, { 'content-type': 'application/json', 'content-length': '2' }).end('{}');
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${port}` }) + '\n');
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
