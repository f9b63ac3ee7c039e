/**
 * The coordinator's side of AgentService/Connect when it must say no: a bad
 * Hello, and new streams while it shuts down. Real coordinator and agent
 * processes; a raw gRPC client plays the misbehaving agent.
 */
import * as grpc from '@grpc/grpc-js';
import { AgentService, createGrpcClient, type CoordinatorMessage } from '@kairos/proto';
import {
  createTestDatabase,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type TestDatabase,
} from '@kairos/testing';

/** Opens one Connect call on its own channel, sends Hello, and collects what comes back until the status. */
function rawConnect(address: string, hello: { agentId: string; capacity: number }) {
  const client = createGrpcClient(AgentService, address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
  const call = client.connect();
  const messages: CoordinatorMessage[] = [];
  call.on('data', (message: CoordinatorMessage) => messages.push(message));
  call.on('error', () => {});
  const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  call.write({ kind: { case: 'hello', value: { agentId: hello.agentId, tasks: ['sleep'], capacity: hello.capacity, heldLeases: [], version: 'test' } } });
  return {
    messages,
    status: status.finally(() => client.close()),
    cancel: () => call.cancel(),
  };
}

describe('agent streams the coordinator refuses', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });
  beforeEach(async () => {
    await stopAll();
    await db.truncate();
  });

  it('ends a stream with a bad Hello with INVALID_ARGUMENT naming the field', async () => {
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url });
    const stream = rawConnect(coordinator.grpcAddress, { agentId: 'bad', capacity: 0 });
    const status = await stream.status;
    expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(status.details).toContain('hello.capacity');
    expect(stream.messages).toEqual([]);
  });

  // Chaos finding 3: a draining coordinator welcomed every new stream and sent Drain
  // again, and agents redialled at once on the same connection: ~1,900 streams in 3 s.
  it('while shutting down, refuses new streams with UNAVAILABLE; its agent backs off and finishes its job on the next coordinator', async () => {
    let coordinator = await startCoordinatorProcess({ databaseUrl: db.url, leaseMs: 6_000 });
    const grpcPort = Number(coordinator.grpcAddress.split(':')[1]);
    let api = restClient(coordinator.httpUrl);
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'mover' });
    await waitFor(async () => (await api.agents()).body.length === 1, { description: 'agent connected' });
    const jobId = (await api.createJob({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 2 } })).body.jobId;
    await waitFor(async () => (await api.getJob(jobId)).body.state === 'CLAIMED', { description: 'job claimed' });
    // Renewal latency is exported (chaos finding 7: self-fence waves under CPU starvation).
    await waitFor(
      async () => {
        const text = await (await fetch(`${coordinator.httpUrl}/metrics`)).text();
        return Number(/^kairos_heartbeat_renew_seconds_count (\d+)/m.exec(text)?.[1] ?? 0) >= 1;
      },
      { description: 'a renewal in kairos_heartbeat_renew_seconds' },
    );

    const first = coordinator.proc;
    first.signal('SIGTERM');
    await first.waitForLine((line) => line.msg === 'shutting down: agents are told to move to another coordinator');
    const late = rawConnect(coordinator.grpcAddress, { agentId: 'late', capacity: 1 });
    const lateStatus = await late.status;
    expect(lateStatus.code).toBe(grpc.status.UNAVAILABLE);
    expect(late.messages).toEqual([]);
    await first.exited;
    // The agent's replacement dials during the 1 s grace: refused, and spaced by backoff.
    const refused = first.lines.filter((line) => line.msg === 'closing agent stream' && String(line.details).includes('shutting down'));
    expect(refused.length).toBeGreaterThanOrEqual(1);
    expect(refused.length).toBeLessThanOrEqual(12);

    coordinator = await startCoordinatorProcess({ databaseUrl: db.url, leaseMs: 6_000, grpcPort, name: 'coordinator-2' });
    api = restClient(coordinator.httpUrl);
    await waitFor(async () => (await api.getJob(jobId)).body.state === 'COMPLETED', { description: 'job completed', timeoutMs: 15_000 });
    const { rows } = await db.pool.query<{ outcome: string }>('SELECT outcome FROM runs WHERE job_id = $1', [jobId]);
    expect(rows.map((r) => r.outcome)).toEqual(['SUCCEEDED']);
  });
});
