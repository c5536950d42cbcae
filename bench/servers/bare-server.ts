// The baseline of the HTTP benchmarks: the least a node:http server can do to answer an ID, a
// counter and `res.end`. Whatever frond does per request (routing, validation, the allocator, headers)
// shows as the gap to this server, measured with the same load generator in the same run.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

let counter = 0;
const server = createServer((_req, res) => {
  res.end(String(++counter));
});
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ event: 'listening', url: `http://127.0.0.1:${port}` })}\n`);
});
process.once('SIGTERM', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
