// Runs an agent from the build output (dist/) in a process of its own, with a
// custom handler that hogs the main thread with CPU work. Used by
// session-worker.test.ts. Arguments: <thread: worker|inline> <busyMs>.
// The coordinator address comes from KAIROS_COORDINATOR.
'use strict';
const path = require('node:path');
const { pino } = require('pino');
const { startAgentWith } = require(path.join(__dirname, '..', '..', 'dist', 'runtime', 'agent.js'));

const [thread, busyMs] = process.argv.slice(2);

async function busy() {
  const until = performance.now() + Number(busyMs);
  while (performance.now() < until) {
    // spin: never yields to the event loop
  }
}

startAgentWith(
  {
    coordinator: process.env.KAIROS_COORDINATOR,
    agentId: `busy-agent-${thread}`,
    tasks: ['busy'],
    capacity: 1,
    handlers: { busy },
    httpAllowHosts: [],
    execAllow: [],
    drainGraceMs: 1000,
    logger: pino({ level: 'warn' }, pino.destination(2)),
  },
  { thread },
).then((agent) => {
  process.on('SIGTERM', () => void agent.close().then(() => process.exit(0)));
});
