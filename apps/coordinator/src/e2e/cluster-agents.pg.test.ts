/**
 * The cluster-wide agents view: two coordinators on one store, an agent on
 * each, and both coordinators answer GET /agents and ListAgents with both
 * agents (and which coordinator holds each), in the caller's namespace only.
 * A coordinator that dies drops out after three presence intervals; one that
 * stops cleanly withdraws its agents at once. Presence is written when agents
 * come and go and once per interval, never per heartbeat.
 */
import * as grpc from '@grpc/grpc-js';
import { createGrpcClient, JobService } from '@kairos/proto';
import {
  createTestDatabase,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type CoordinatorProcess,
  type TestDatabase,
} from '@kairos/testing';

type Agent = { agentId: string; coordinatorId: string; namespace: string; tasks: string[]; lastHeartbeatAt: string | null };

describe('agents seen through any coordinator', () => {
  let db: TestDatabase;
  let c1: CoordinatorProcess;
  let c2: CoordinatorProcess;
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    db = await createTestDatabase();
    const store = db.createStore();
    for (const [name, namespace, role] of [
      ['reader', 'ops', 'reader'],
      ['agent', 'ops', 'agent'],
      ['otherReader', 'other', 'reader'],
      ['otherAgent', 'other', 'agent'],
    ] as const) {
      tokens[name] = (await store.tokens.create({ namespace, role })).secret;
    }
    const env = { KAIROS_PRESENCE_INTERVAL_MS: '500' };
    c1 = await startCoordinatorProcess({ databaseUrl: db.url, auth: true, name: 'c1', env });
    c2 = await startCoordinatorProcess({ databaseUrl: db.url, auth: true, name: 'c2', env });
    await startAgentProcess({ coordinator: c1.grpcAddress, agentId: 'on-c1', tasks: 'sleep', env: { KAIROS_TOKEN: tokens.agent! } });
    await startAgentProcess({ coordinator: c2.grpcAddress, agentId: 'on-c2', tasks: 'http', env: { KAIROS_TOKEN: tokens.agent! } });
    await startAgentProcess({ coordinator: c2.grpcAddress, agentId: 'elsewhere', tasks: 'sleep', env: { KAIROS_TOKEN: tokens.otherAgent! } });
  }, 60_000);
  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });

  const restAgents = async (coordinator: CoordinatorProcess, token = tokens.reader!) =>
    ((await restClient(coordinator.httpUrl, token).agents()).body as unknown as Agent[]).map((a) => [a.agentId, a.coordinatorId, a.namespace]);

  test('each coordinator lists the agents of both, in the caller namespace only', async () => {
    const both = [
      ['on-c1', 'c1', 'ops'],
      ['on-c2', 'c2', 'ops'],
    ];
    await waitFor(async () => JSON.stringify(await restAgents(c1)) === JSON.stringify(both), { timeoutMs: 15_000, description: 'both agents through c1' });
    expect(await restAgents(c2)).toEqual(both);
    // The other namespace's agent is published on its own schedule: wait for it too, then exactly it.
    const elsewhere = [['elsewhere', 'c2', 'other']];
    await waitFor(async () => JSON.stringify(await restAgents(c1, tokens.otherReader)) === JSON.stringify(elsewhere), {
      timeoutMs: 15_000,
      description: "the other namespace's agent through c1",
    });
    expect(await restAgents(c1, tokens.otherReader)).toEqual(elsewhere);
  });

  test('gRPC ListAgents gives the same cluster-wide list', async () => {
    const client = createGrpcClient(JobService, c1.grpcAddress, grpc.credentials.createInsecure());
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${tokens.reader}`);
    const answer = await new Promise<{ agents: Array<{ agentId: string; coordinatorId: string; tasks: string[] }> }>((resolve, reject) =>
      client.listAgents({} as never, metadata, (error, value) => (error ? reject(error) : resolve(value as never))),
    );
    client.close();
    expect(answer.agents.map((a) => [a.agentId, a.coordinatorId, a.tasks])).toEqual([
      ['on-c1', 'c1', ['sleep']],
      ['on-c2', 'c2', ['http']],
    ]);
  });

  let c3: CoordinatorProcess;

  test('heartbeats do not write presence: between two publications the row stays as it was while the agent heartbeats', async () => {
    // A coordinator whose periodic publication is a minute away: only the agent's arrival writes its row.
    c3 = await startCoordinatorProcess({ databaseUrl: db.url, auth: true, name: 'c3', env: { KAIROS_PRESENCE_INTERVAL_MS: '60000' } });
    await startAgentProcess({ coordinator: c3.grpcAddress, agentId: 'on-c3', tasks: 'sleep', env: { KAIROS_TOKEN: tokens.agent! } });
    await waitFor(async () => (await restAgents(c1)).some(([id]) => id === 'on-c3'), { timeoutMs: 15_000, description: 'on-c3 through c1' });
    const row = async () => (await db.pool.query(`SELECT seen_at, view FROM agent_presence WHERE agent_id = 'on-c3'`)).rows[0] as { seen_at: Date; view: unknown };
    const before = await row();
    // The live view (through c3, its own agent) sees three new heartbeats meanwhile.
    const heartbeats = new Set<string>();
    await waitFor(
      async () => {
        const live = (await restClient(c3.httpUrl, tokens.reader).agents()).body as unknown as Agent[];
        const beat = live.find((agent) => agent.agentId === 'on-c3')?.lastHeartbeatAt;
        if (beat) heartbeats.add(beat);
        return heartbeats.size >= 3;
      },
      { timeoutMs: 15_000, description: 'three heartbeats of on-c3' },
    );
    expect(await row()).toEqual(before);
  });

  test('a coordinator that dies drops out after three intervals; one that stops withdraws at once', async () => {
    c2.proc.signal('SIGKILL');
    await c2.proc.exited;
    const survivors = [
      ['on-c1', 'c1', 'ops'],
      ['on-c3', 'c3', 'ops'],
    ];
    await waitFor(async () => JSON.stringify(await restAgents(c1)) === JSON.stringify(survivors), {
      timeoutMs: 15_000,
      description: "c2's agents gone from c1's view",
    });
    // c3, stopped cleanly, withdraws its agent at once, not after three intervals (a minute for it).
    await c3.proc.stop();
    const rows = await db.pool.query(`SELECT count(*)::int AS n FROM agent_presence WHERE coordinator_id = 'c3'`);
    expect(rows.rows[0].n).toBe(0);
    expect(await restAgents(c1)).toEqual([['on-c1', 'c1', 'ops']]);
  });
});
