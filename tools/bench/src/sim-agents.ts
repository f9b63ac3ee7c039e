/**
 * Simulated agents for W9: SIM_AGENTS streams to the coordinator at
 * SIM_COORDINATOR, each a real AgentService/Connect stream that says Hello
 * (task `sim-idle`, capacity SIM_CAPACITY) and then heartbeats at the interval
 * the Welcome asks for, as a real agent does, holding no lease. Streams are
 * spread over connections of 50 (the coordinator allows 100 concurrent
 * streams per connection). Prints `{"ready": N}` once every stream was
 * welcomed; runs until SIGTERM, then ends its streams and exits once the
 * coordinator has closed them all.
 */
import * as grpc from '@grpc/grpc-js';
import { AgentService, createGrpcClient } from '@kairos/proto';

const count = Number(process.env.SIM_AGENTS ?? '1000');
const address = process.env.SIM_COORDINATOR ?? '127.0.0.1:50051';
const capacity = Number(process.env.SIM_CAPACITY ?? '4');
const PER_CONNECTION = 50;

type Stream = grpc.ClientDuplexStream<unknown, { kind: { case: string; value: { heartbeatIntervalMs?: number } } }>;

const clients: Array<ReturnType<typeof createGrpcClient<typeof AgentService.method>>> = [];
const timers: NodeJS.Timeout[] = [];
const streams: Stream[] = [];
/** One per stream: settles when the coordinator has closed it (its status arrived). */
const ended: Array<Promise<void>> = [];
let welcomed = 0;

for (let i = 0; i < count; i++) {
  if (i % PER_CONNECTION === 0) {
    // A distinct option per client gives each its own channel (and TCP connection).
    clients.push(createGrpcClient(AgentService, address, grpc.credentials.createInsecure(), { 'grpc.bench_connection': clients.length, 'grpc.use_local_subchannel_pool': 1 }));
  }
  const client = clients[clients.length - 1]!;
  const stream = (client as unknown as { connect(): Stream }).connect();
  streams.push(stream);
  let seq = 0n;
  stream.on('data', (message) => {
    if (message.kind.case !== 'welcome') return;
    welcomed += 1;
    if (welcomed === count) process.stdout.write(`${JSON.stringify({ ready: count })}\n`);
    const interval = message.kind.value.heartbeatIntervalMs ?? 3_000;
    timers.push(setInterval(() => stream.write({ kind: { case: 'heartbeat', value: { seq: ++seq, leases: [] } } }), interval));
  });
  stream.on('error', () => undefined);
  ended.push(new Promise((resolve) => stream.on('status', () => resolve())));
  stream.write({ kind: { case: 'hello', value: { agentId: `sim-${i}`, tasks: ['sim-idle'], capacity, version: 'bench-sim' } } });
}

process.on('SIGTERM', () => {
  for (const timer of timers) clearInterval(timer);
  for (const stream of streams) stream.end();
  // Exit once the coordinator has closed every stream (it answers a half-closed stream with its status).
  void Promise.all(ended).then(() => {
    for (const client of clients) client.close();
    process.exit(0);
  });
});
