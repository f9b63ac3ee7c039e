/**
 * Agents that misbehave, as real processes over real gRPC: one with a valid
 * token naming another agent's lease, one sending generations past 2^63, silent
 * streams, and a Hello followed by a vanishing peer. What must hold: the
 * honest agent's run is the one recorded, its renewals never fail because of
 * someone else's bad entry, and the coordinator keeps no ghost sessions.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { Store } from '@kairos/store';
import {
  createTestDatabase,
  metricValue,
  restClient,
  spawnNode,
  startAgentProcess,
  startCoordinatorProcess,
  startHeldCalls,
  stopAll,
  waitFor,
  type CoordinatorProcess,
  type ManagedProcess,
  type TestDatabase,
} from '@kairos/testing';

const ROGUE = path.join(__dirname, '..', 'test-support', 'rogue-agent.cjs');
const NS = 'alpha';

describe('hostile and broken agents', () => {
  let db: TestDatabase;
  let store: Store;
  let coordinator: CoordinatorProcess;
  let admin: ReturnType<typeof restClient>;
  let adminSecret: string;

  const agentToken = async () => (await store.tokens.create({ namespace: NS, role: 'agent' })).secret;

  function rogue(name: string, env: Record<string, string>): ManagedProcess {
    return spawnNode(name, ROGUE, { ROGUE_ADDRESS: coordinator.grpcAddress, ROGUE_AGENT_ID: name, ...env });
  }

  const metric = (name: string, labels: Record<string, string> = {}) => metricValue(coordinator.httpUrl, name, labels);

  beforeAll(async () => {
    db = await createTestDatabase();
    store = db.createStore();
    adminSecret = (await store.tokens.create({ namespace: NS, role: 'admin' })).secret;
    coordinator = await startCoordinatorProcess({
      databaseUrl: db.url,
      auth: true,
      leaseMs: 1_500,
      env: { KAIROS_AGENT_HELLO_TIMEOUT_MS: '1000', KAIROS_AGENT_SILENCE_LIMIT_MS: '2500' },
    });
    admin = restClient(coordinator.httpUrl, adminSecret);
  }, 60_000);

  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });

  it('a rogue agent with a valid token cannot renew, complete or release a lease another agent holds', async () => {
    const victim = await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'victim', tasks: 'http', env: { KAIROS_TOKEN: await agentToken() } });
    // Runs until the rogue is done and the victim has renewed its lease (this test holds the call open),
    // however long a loaded machine takes to start the rogue.
    const held = await startHeldCalls();
    const created = await admin.createJob({ task: 'http', runAt: new Date().toISOString(), payload: { url: held.url(), timeoutMs: 600_000 } });
    const jobId: string = created.body.jobId;
    const claimed = await waitFor(
      async () => {
        const { rows } = await db.pool.query(`SELECT lease_owner, lease_generation, lease_until FROM jobs WHERE id = $1 AND state = 'CLAIMED'`, [jobId]);
        return rows[0];
      },
      { description: 'the victim to claim the job' },
    );
    expect(claimed.lease_owner).toBe('victim');
    const generation = String(claimed.lease_generation);
    const foreign = [{ jobId, generation }];
    const malformed = [
      { jobId, generation: String(2n ** 63n + 1n) },
      { jobId: '00000000-0000-7000-8000-000000000001', generation: String(2n ** 64n - 1n) },
      { jobId: 'not-a-uuid', generation: '1' },
    ];
    const refusalsBefore = await metric('kairos_foreign_lease_refusals_total');

    const intruder = rogue('rogue', {
      ROGUE_TOKEN: await agentToken(),
      ROGUE_ACTIONS: JSON.stringify([
        { kind: 'heartbeat', leases: [...foreign, ...malformed] },
        { kind: 'outcome', leases: [...foreign, ...malformed] },
        { kind: 'release', leases: [...foreign, ...malformed] },
      ]),
      ROGUE_REPEAT: '30',
      ROGUE_GAP_MS: '40',
    });
    await intruder.waitForLine((line) => line.msg === 'actions sent', 15_000);
    const mid = await db.pool.query('SELECT state, lease_owner, lease_generation FROM jobs WHERE id = $1', [jobId]);
    expect(mid.rows[0]).toMatchObject({ state: 'CLAIMED', lease_owner: 'victim', lease_generation: claimed.lease_generation });
    await held.arrived(1);
    // The victim renewed its lease through the flood (its heartbeats were never failed by the rogue's entries).
    await waitFor(
      async () => {
        const { rows } = await db.pool.query(`SELECT lease_until FROM jobs WHERE id = $1 AND lease_owner = 'victim'`, [jobId]);
        return rows[0] && rows[0].lease_until > claimed.lease_until;
      },
      { description: 'the victim to renew its lease' },
    );
    held.release();

    await waitFor(async () => (await admin.getJob(jobId)).body.state === 'COMPLETED', { timeoutMs: 20_000, description: 'the victim to finish' });
    const runs = (await admin.runs(jobId)).body.runs;
    expect(runs.map((run: { workerId: string; outcome: string; leaseGeneration: number }) => [run.workerId, run.outcome, String(run.leaseGeneration)])).toEqual([
      ['victim', 'SUCCEEDED', generation],
    ]);

    // Every renewal the rogue asked for was refused, every outcome stale.
    const replies = intruder.lines.filter((line) => line.msg === 'received');
    const statuses = replies.filter((line) => line.kind === 'renewReply').flatMap((line) => (line.value as { statuses: Array<{ state: { case: string } }> }).statuses);
    const acks = replies.filter((line) => line.kind === 'outcomeAcks').flatMap((line) => (line.value as { acks: Array<{ result: number }> }).acks);
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.every((status) => status.state.case === 'lost')).toBe(true);
    expect(acks.length).toBeGreaterThan(0);
    expect(acks.every((ack) => ack.result !== 1)).toBe(true); // 1 = RECORDED
    expect(await metric('kairos_foreign_lease_refusals_total')).toBeGreaterThan(refusalsBefore);

    // The victim's own id with another token is refused while the victim is connected.
    const impostor = rogue('victim', { ROGUE_TOKEN: await agentToken() });
    const status = await impostor.waitForLine((line) => line.msg === 'status', 10_000);
    expect(status.code).toBe(grpc.status.PERMISSION_DENIED);
    await victim.stop();
    await intruder.stop();
    await held.close();
  }, 60_000);

  it('a black-hole agent (capacity 10,000, never runs anything) is quarantined; a healthy agent runs all 20 jobs, none DEAD', async () => {
    const hole = rogue('black-hole', {
      ROGUE_TOKEN: await agentToken(),
      ROGUE_TASKS: 'sleep',
      ROGUE_CAPACITY: '10000',
      ROGUE_HEARTBEAT_MS: '200',
    });
    await hole.waitForLine((line) => line.msg === 'received' && line.kind === 'welcome', 10_000);
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'healthy', tasks: 'sleep', env: { KAIROS_TOKEN: await agentToken() } });
    await waitFor(async () => (await admin.agents()).body.some((a: { agentId: string }) => a.agentId === 'healthy'), {
      description: 'both agents connected',
    });
    const runAt = new Date().toISOString();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      ids.push((await admin.createJob({ task: 'sleep', runAt, payload: { seconds: 0.1 }, name: `spike-${i}` })).body.jobId);
    }
    await waitFor(
      async () => {
        const { rows } = await db.pool.query(`SELECT state FROM jobs WHERE id = ANY($1::uuid[])`, [ids]);
        return rows.every((row) => row.state === 'COMPLETED' || row.state === 'DEAD');
      },
      { timeoutMs: 30_000, description: 'all 20 jobs finished' },
    );
    const { rows: states } = await db.pool.query(`SELECT state, count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[]) GROUP BY state`, [ids]);
    expect(states).toEqual([{ state: 'COMPLETED', n: 20 }]);
    const { rows: runs } = await db.pool.query(
      `SELECT worker_id, outcome, count(*)::int AS n FROM runs WHERE job_id = ANY($1::uuid[]) GROUP BY worker_id, outcome ORDER BY worker_id, outcome`,
      [ids],
    );
    // The black hole did take work (the test is not vacuous), lost it to lease expiry, and never again.
    const lost = runs.find((row) => row.worker_id === 'black-hole');
    expect(lost).toMatchObject({ outcome: 'LEASE_EXPIRED' });
    expect(runs.filter((row) => row.worker_id === 'black-hole')).toHaveLength(1);
    expect(runs.find((row) => row.worker_id === 'healthy' && row.outcome === 'SUCCEEDED')?.n).toBe(20);
    const listed = (await admin.agents()).body.find((a: { agentId: string }) => a.agentId === 'black-hole');
    expect(listed.quarantinedUntil).not.toBeNull();
    expect(await metric('kairos_agent_quarantines_total')).toBeGreaterThanOrEqual(1);
    expect(await metric('kairos_agents_quarantined')).toBe(1);
    // The cluster-wide gauge per task and state (read at most once a second) counts it quarantined, the healthy one ready.
    await waitFor(async () => (await metric('kairos_task_agents', { namespace: NS, task: 'sleep', state: 'quarantined' })) === 1, {
      description: 'kairos_task_agents quarantined 1',
    });
    expect(await metric('kairos_task_agents', { namespace: NS, task: 'sleep', state: 'ready' })).toBe(1);
    await hole.stop();
  }, 60_000);

  it('closes a stream that sends no Hello, and one that stops heartbeating', async () => {
    const noHello = rogue('no-hello', { ROGUE_TOKEN: await agentToken(), ROGUE_SKIP_HELLO: '1' });
    const first = await noHello.waitForLine((line) => line.msg === 'status', 10_000);
    expect(first.code).toBe(grpc.status.DEADLINE_EXCEEDED);

    const silent = rogue('silent', { ROGUE_TOKEN: await agentToken() });
    await silent.waitForLine((line) => line.msg === 'received' && line.kind === 'welcome', 10_000);
    const second = await silent.waitForLine((line) => line.msg === 'status', 10_000);
    expect(second.code).toBe(grpc.status.UNAVAILABLE);
    expect(String(second.details)).toContain('no message for');
  }, 30_000);

  it('refuses a heartbeat naming more leases than the capacity allows', async () => {
    const leases = Array.from({ length: 100 }, (_, i) => ({ jobId: `00000000-0000-7000-8000-${String(i).padStart(12, '0')}`, generation: '1' }));
    const flood = rogue('flood', { ROGUE_TOKEN: await agentToken(), ROGUE_ACTIONS: JSON.stringify([{ kind: 'heartbeat', leases }]) });
    const status = await flood.waitForLine((line) => line.msg === 'status', 10_000);
    expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(String(status.details)).toContain('heartbeat.leases names 100 leases; at most 18 for capacity 1');
  }, 30_000);

  it('a Hello followed by an early disconnect leaves no session behind', async () => {
    const agentsNow = async () => (await admin.agents()).body.length;
    const before = await agentsNow();
    for (let i = 0; i < 5; i++) {
      const ghost = rogue(`ghost-${i}`, { ROGUE_TOKEN: await agentToken(), ROGUE_CAPACITY: '1000', ROGUE_HELD: '2000', ROGUE_EXIT_AFTER_HELLO: '1' });
      await ghost.exited;
    }
    await waitFor(async () => (await metric('kairos_connected_agents')) === before, {
      timeoutMs: 10_000,
      description: 'the connected-agents gauge back to the true count',
    });
    expect(await agentsNow()).toBe(before);
  }, 30_000);
});
