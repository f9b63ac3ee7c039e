#!/usr/bin/env node
// A private embedded PostgreSQL that a test can stop and start again on the same
// port (database-outage tests). Prints one JSON line per state change on stdout;
// reads commands from stdin: "stop", "start", "exit".
// Usage: node libs/testing/bin/pg-controller.mjs <dataDir>   (after `npm run build`)
import readline from 'node:readline';
import store from '../../store/dist/index.js';

const dataDir = process.argv[2];
if (!dataDir) {
  process.stderr.write('usage: pg-controller.mjs <dataDir>\n');
  process.exit(2);
}
let server = await store.startEmbeddedPostgres({ dataDir, settings: { fsync: 'off' } });
const port = server.port;
const say = (event) => process.stdout.write(`${JSON.stringify({ ...event, url: server.url, pid: server.pid })}\n`);
say({ state: 'running' });

const input = readline.createInterface({ input: process.stdin });
for await (const line of input) {
  const command = line.trim();
  if (command === 'stop') {
    await server.stop();
    say({ state: 'stopped' });
  } else if (command === 'start') {
    server = await store.startEmbeddedPostgres({ dataDir, port, settings: { fsync: 'off' } });
    say({ state: 'running' });
  } else if (command === 'exit') {
    break;
  }
}
await server.stop();
process.exit(0);
