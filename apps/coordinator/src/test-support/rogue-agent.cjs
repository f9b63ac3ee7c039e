#!/usr/bin/env node
// A misbehaving agent, as a real process, for the security tests. It opens an
// AgentService stream with ROGUE_TOKEN as agent ROGUE_AGENT_ID, and once
// welcomed sends the messages in ROGUE_ACTIONS (JSON) ROGUE_REPEAT times,
// ROGUE_GAP_MS apart. It prints every coordinator message and the final
// status as JSON lines on stdout (libs/testing reads them). Generations are
// decimal strings, so values past 2^53 arrive intact.
//
// ROGUE_HEARTBEAT_MS: after the actions, heartbeat this often naming no lease (a black hole).
// ROGUE_SKIP_HELLO=1: open the stream and say nothing.
// ROGUE_HELD: leases to announce in Hello (invented ids); ROGUE_EXIT_AFTER_HELLO=1: exit at once.
// ROGUE_ACTIONS: [{ "kind": "heartbeat" | "outcome" | "release", "leases": [{ "jobId", "generation" }] }]
'use strict';
const grpc = require('@grpc/grpc-js');
const { AgentService, HandlerResult, createGrpcClient } = require('@kairos/proto');

const env = process.env;
const actions = JSON.parse(env.ROGUE_ACTIONS || '[]');
const repeat = Number(env.ROGUE_REPEAT || '1');
const gapMs = Number(env.ROGUE_GAP_MS || '0');
const print = (line) => process.stdout.write(JSON.stringify(line, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)) + '\n');

const client = createGrpcClient(AgentService, env.ROGUE_ADDRESS, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
const metadata = new grpc.Metadata();
if (env.ROGUE_TOKEN) metadata.set('authorization', `Bearer ${env.ROGUE_TOKEN}`);
const call = client.connect(metadata);
let seq = 0n;
const refs = (leases) => leases.map((l) => ({ jobId: l.jobId, leaseGeneration: BigInt(l.generation) }));

function send(action) {
  switch (action.kind) {
    case 'heartbeat':
      seq += 1n;
      call.write({ kind: { case: 'heartbeat', value: { seq, leases: refs(action.leases) } } });
      return;
    case 'outcome':
      call.write({
        kind: {
          case: 'outcomes',
          value: { outcomes: refs(action.leases).map((r) => ({ ...r, result: HandlerResult.SUCCEEDED, error: '' })) },
        },
      });
      return;
    case 'release':
      call.write({ kind: { case: 'release', value: { leases: refs(action.leases) } } });
      return;
    default:
      throw new Error(`unknown action ${action.kind}`);
  }
}

call.on('data', async (message) => {
  print({ msg: 'received', kind: message.kind.case, value: message.kind.value });
  if (message.kind.case !== 'welcome') return;
  for (let round = 0; round < repeat; round++) {
    for (const action of actions) send(action);
    if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
  }
  print({ msg: 'actions sent' });
  // A black hole: heartbeats that name no lease, forever, whatever it was assigned.
  if (env.ROGUE_HEARTBEAT_MS) {
    setInterval(() => {
      seq += 1n;
      call.write({ kind: { case: 'heartbeat', value: { seq, leases: [] } } });
    }, Number(env.ROGUE_HEARTBEAT_MS));
  }
});
call.on('error', () => undefined);
call.on('status', (status) => {
  print({ msg: 'status', code: status.code, details: status.details });
  client.close();
});
const held = Array.from({ length: Number(env.ROGUE_HELD || '0') }, (_, i) => ({
  jobId: `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`,
  leaseGeneration: 1n,
}));
if (env.ROGUE_SKIP_HELLO !== '1') call.write({
  kind: {
    case: 'hello',
    value: {
      agentId: env.ROGUE_AGENT_ID || 'rogue',
      tasks: (env.ROGUE_TASKS || 'nothing').split(','),
      capacity: Number(env.ROGUE_CAPACITY || '1'),
      heldLeases: held,
      version: 'rogue',
    },
  },
});
// Vanish right after Hello, while the coordinator is still renewing what it announced.
if (env.ROGUE_EXIT_AFTER_HELLO === '1') setImmediate(() => process.exit(0));
