/** The baseline: a bare node:http server answering a small JSON body. */
import http from 'node:http';

const body = JSON.stringify({ id: 'org_baseline', name: 'Baseline', createdAt: new Date().toISOString() });
const server = http.createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as { port: number };
  process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${port}` }) + '\n');
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
