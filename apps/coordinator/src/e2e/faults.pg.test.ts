/**
 * The failure cases of the design card, with real processes: agents killed
 * (SIGKILL) and paused (SIGSTOP) mid-run, a coordinator killed and restarted,
 * two coordinators sharing one database. Leases are short (1.5 s) so each
 * case resolves in seconds.
 */
import {
  createTestDatabase,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type TestDatabase,
} from '@kairos/testing';
import { startReceiver, type Receiver } from '../test-support/receiver';

describe('faults, end to end', () => {
  let db: TestDatabase;
  let receiver: Receiver;

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await stopAll();
    await receiver?.close();
    await db?.drop();
  });
  beforeEach(async () => {
    await stopAll();
    await db.truncate();
  });

  async function untilJob(api: ReturnType<typeof restClient>, jobId: string, predicate: (job: any) => boolean, what: string, timeoutMs = 20_000) {
    return waitFor(
      async () => {
        const job = (await api.getJob(jobId)).body;
        return predicate(job) ? job : undefined;
      },
      { timeoutMs, description: what },
    );
  }

  async function runsOf(jobId: string) {
    const { rows } = await db.pool.query('SELECT * FROM runs WHERE job_id = $1 ORDER BY id', [jobId]);
    return rows;
  }

  it('kill -9 of an agent mid-run: the job runs again elsewhere after the lease lapses', async () => {
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url, leaseMs: 1_500 });
    const api = restClient(coordinator.httpUrl);
    const victim = await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'victim' });
    await waitFor(async () => (await api.agents()).body.length === 1, { description: 'victim connected' });

    const created = await api.createJob({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 1 } });
    const jobId = created.body.jobId;
    await untilJob(api, jobId, (job) => job.state === 'CLAIMED' && job.leaseOwner === 'victim', 'claimed by the victim');
    victim.signal('SIGKILL');
    const killedAt = Date.now();
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'survivor' });

    await untilJob(api, jobId, (job) => job.state === 'COMPLETED', 'completed by the survivor');
    const runs = await runsOf(jobId);
    expect(runs.map((r) => [r.worker_id, r.outcome, Number(r.lease_generation)])).toEqual([
      ['victim', 'LEASE_EXPIRED', 1],
      ['survivor', 'SUCCEEDED', 2],
    ]);
    // Recovery: the lease (1.5 s) plus a reaper pass, not more.
    expect(runs[1].started_at.getTime() - killedAt).toBeLessThan(5_000);
  }, 40_000);

  it('SIGSTOP past the lease: the paused agent is fenced off, and no two valid leases overlap', async () => {
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url, leaseMs: 1_500 });
    const api = restClient(coordinator.httpUrl);
    const paused = await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'paused' });
    await waitFor(async () => (await api.agents()).body.length === 1, { description: 'agent connected' });

    const created = await api.createJob({
      task: 'http',
      runAt: new Date().toISOString(),
      payload: { url: `${receiver.url}/work?ms=1500` },
    });
    const jobId = created.body.jobId;
    await waitFor(() => receiver.calls.find((c) => c.jobId === jobId), { description: 'first call reached the receiver' });
    paused.signal('SIGSTOP');
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'healthy' });
    await untilJob(api, jobId, (job) => job.state === 'COMPLETED', 'completed by the healthy agent');

    paused.signal('SIGCONT');
    // The woken agent notices its lease is gone and aborts the handler. Two orders are legal: its
    // trust window ran out while it was stopped (the timer fires first), or the coordinator's Revoke
    // (EXPIRED), which arrived meanwhile, is read first when the thread was not idle at SIGSTOP.
    const lost = await paused.waitForLine((line) => line.msg === 'lease lost' && line.lease === `${jobId}@1`, 10_000);
    if (lost.reason === 'trust-window') {
      // Its late report (generation 1) reaches the coordinator and is rejected by the fence.
      await coordinator.proc.waitForLine(
        (line) => String(line.msg).startsWith('stale outcome rejected') && line.jobId === jobId && line.leaseGeneration === 1,
        10_000,
      );
    } else {
      expect(lost).toMatchObject({ reason: 'expired', source: 'revoke' });
      // Revoked: the agent reports nothing for it.
      await paused.waitForLine((line) => line.msg === 'outcome dropped: lease no longer held' && line.lease === `${jobId}@1`, 10_000);
    }

    const runs = await runsOf(jobId);
    expect(runs.map((r) => [r.worker_id, r.outcome, Number(r.lease_generation)])).toEqual([
      ['paused', 'LEASE_EXPIRED', 1],
      ['healthy', 'SUCCEEDED', 2],
    ]);
    // Valid-lease windows do not overlap: the first ended (reaped) before the second began.
    expect(runs[0].finished_at.getTime()).toBeLessThanOrEqual(runs[1].started_at.getTime());
    // The receiver saw generation 2 succeed; anything later from generation 1 was refused as stale.
    const calls = receiver.calls.filter((c) => c.jobId === jobId);
    expect(calls.some((c) => c.fencingToken === 2 && !c.rejectedAsStale)).toBe(true);
    expect(calls.filter((c) => c.fencingToken === 1 && c.startedAt > runs[1].started_at.getTime() && !c.rejectedAsStale)).toEqual([]);
  }, 40_000);

  it('kill -9 of the coordinator while jobs run, then restart: nothing re-runs, nothing is lost', async () => {
    // A longer lease: the restart (slow on a loaded CI machine) must fit inside it for the agents' leases to survive.
    // No pre-dispatch on the first one: `later` below must not be claimed before the kill (see there).
    let coordinator = await startCoordinatorProcess({ databaseUrl: db.url, leaseMs: 10_000, env: { KAIROS_PREDISPATCH_MS: '0' } });
    const grpcPort = Number(coordinator.grpcAddress.split(':')[1]);
    let api = restClient(coordinator.httpUrl);
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'steady', capacity: 8 });
    await waitFor(async () => (await api.agents()).body.length === 1, { description: 'agent connected' });

    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const created = await api.createJob({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 2.5 } });
      ids.push(created.body.jobId);
    }
    await waitFor(async () => {
      const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[]) AND state = 'CLAIMED'`, [ids]);
      return rows[0].n === ids.length;
    }, { description: 'all four running' });
    // Due while the coordinator is down. Created only now: had it come due before the kill, the
    // old coordinator could claim it and die before the assignment left, and it would rightly run
    // again after its lease (LEASE_EXPIRED, then SUCCEEDED).
    const later = await api.createJob({ task: 'sleep', runAt: new Date(Date.now() + 1_000).toISOString(), payload: { seconds: 0.1 } });

    coordinator.proc.signal('SIGKILL');
    await coordinator.proc.exited;
    coordinator = await startCoordinatorProcess({ databaseUrl: db.url, leaseMs: 10_000, grpcPort, name: 'coordinator-2' });
    api = restClient(coordinator.httpUrl);

    for (const id of [...ids, later.body.jobId]) await untilJob(api, id, (job) => job.state === 'COMPLETED', `job ${id} completed`);
    const { rows } = await db.pool.query(
      `SELECT job_id, array_agg(outcome::text ORDER BY id) AS outcomes FROM runs WHERE job_id = ANY($1::uuid[]) GROUP BY job_id`,
      [[...ids, later.body.jobId]],
    );
    expect(rows).toHaveLength(5);
    for (const row of rows) expect(row.outcomes).toEqual(['SUCCEEDED']);
  }, 60_000);

  it('two coordinators on one database: no occurrence runs twice', async () => {
    const first = await startCoordinatorProcess({ databaseUrl: db.url, name: 'coord-1' });
    const second = await startCoordinatorProcess({ databaseUrl: db.url, name: 'coord-2' });
    const api = restClient(first.httpUrl);
    await Promise.all([
      startAgentProcess({ coordinator: first.grpcAddress, agentId: 'a1' }),
      startAgentProcess({ coordinator: first.grpcAddress, agentId: 'a2' }),
      startAgentProcess({ coordinator: second.grpcAddress, agentId: 'b1' }),
      startAgentProcess({ coordinator: second.grpcAddress, agentId: 'b2' }),
    ]);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      ids.push((await api.createJob({ task: 'sleep', schedule: '* * * * * *', payload: { seconds: 0.05 } })).body.jobId);
    }
    await waitFor(
      async () => {
        const { rows } = await db.pool.query(
          `SELECT count(*)::int AS n FROM runs WHERE job_id = ANY($1::uuid[]) AND outcome = 'SUCCEEDED'`,
          [ids],
        );
        return rows[0].n >= 36;
      },
      { timeoutMs: 30_000, description: 'six occurrences of six jobs' },
    );
    for (const id of ids) await api.control(id, 'pause');

    const { rows: duplicates } = await db.pool.query(
      `SELECT job_id, scheduled_for, count(*)::int AS n FROM runs
       WHERE job_id = ANY($1::uuid[]) AND outcome = 'SUCCEEDED' GROUP BY job_id, scheduled_for HAVING count(*) > 1`,
      [ids],
    );
    expect(duplicates).toEqual([]);
    // Both coordinators' agents took part. (SKIPPED rows, recorded for occurrences a slow machine missed, have no worker.)
    const { rows: workers } = await db.pool.query(
      `SELECT DISTINCT worker_id FROM runs WHERE job_id = ANY($1::uuid[]) AND worker_id IS NOT NULL`,
      [ids],
    );
    const names = workers.map((w) => w.worker_id);
    expect(names.some((n) => n.startsWith('a'))).toBe(true);
    expect(names.some((n) => n.startsWith('b'))).toBe(true);
  }, 60_000);
});
