/**
 * Aborting a running run, end to end with real processes: a coordinator (with
 * tokens, so the run records who aborted it), agent processes running `exec`
 * children and `sleep` handlers, and the races the abort has to survive: a
 * completion, a lease expiry (the agent paused with SIGSTOP), and a
 * coordinator killed with SIGKILL while the abort is on its way.
 *
 * Every case checks the two things an abort must never break: each run ends
 * with exactly one outcome, and no two runs of a job overlap in time.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  createTestDatabase,
  metricValue,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type TestDatabase,
} from '@kairos/testing';
import { createKairosClient } from '@kairos/client';
import type { Store } from '@kairos/store';

const SH = '/bin/sh';

describe('abort a running run, end to end', () => {
  let db: TestDatabase;
  let store: Store;
  let workDir: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = db.createStore();
    workDir = mkdtempSync(path.join(tmpdir(), 'kairos-abort-'));
  });
  afterAll(async () => {
    await stopAll();
    await store?.close();
    await db?.drop();
    rmSync(workDir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    await stopAll();
    await db.truncate();
  });

  /** A coordinator with tokens, a writer token named "oncall" and an agent token for `agents`. */
  async function cluster(options: { leaseMs?: number; grpcPort?: number; agentEnv?: Record<string, string> } = {}) {
    const writer = await store.tokens.create({ namespace: 'default', role: 'writer', name: 'oncall' });
    const agentToken = await store.tokens.create({ namespace: 'default', role: 'agent', name: 'agents' });
    const coordinator = await startCoordinatorProcess({
      databaseUrl: db.url,
      auth: true,
      leaseMs: options.leaseMs ?? 1_500,
      ...(options.grpcPort === undefined ? {} : { grpcPort: options.grpcPort }),
    });
    const api = restClient(coordinator.httpUrl, writer.secret);
    const startAgent = (agentId: string, tasks = 'sleep,exec') =>
      startAgentProcess({
        coordinator: coordinator.grpcAddress,
        agentId,
        tasks,
        env: {
          KAIROS_TOKEN: agentToken.secret,
          KAIROS_EXEC_ALLOW: SH,
          KAIROS_EXEC_KILL_GRACE_MS: '2000',
          ...options.agentEnv,
        },
      });
    return { coordinator, api, startAgent, writer, agentToken };
  }

  async function runsOf(jobId: string) {
    const { rows } = await db.pool.query('SELECT * FROM runs WHERE job_id = $1 ORDER BY id', [jobId]);
    return rows;
  }

  async function untilJob(api: ReturnType<typeof restClient>, jobId: string, predicate: (job: any) => boolean, what: string, timeoutMs = 20_000) {
    return waitFor(
      async () => {
        const job = (await api.getJob(jobId)).body;
        return predicate(job) ? job : undefined;
      },
      { timeoutMs, description: what },
    );
  }

  /** Every run ended (one outcome each), and no two executions of the job overlap. */
  async function expectOneOutcomeEachAndNoOverlap(jobId: string) {
    const runs = (await runsOf(jobId)).filter((run) => run.outcome !== 'SKIPPED');
    expect(runs.filter((run) => run.outcome === 'RUNNING' || run.finished_at === null)).toEqual([]);
    for (let i = 1; i < runs.length; i++) {
      expect(runs[i].started_at.getTime()).toBeGreaterThanOrEqual(runs[i - 1].finished_at.getTime());
    }
    return runs;
  }

  it('stops an exec child with SIGTERM, records who aborted it, and ends a one-off job CANCELLED', async () => {
    const { api, startAgent, writer } = await cluster();
    await startAgent('worker');
    await waitFor(async () => (await api.agents()).body.length === 1, { description: 'agent connected' });
    const ready = path.join(workDir, 'child-ready');
    const terminated = path.join(workDir, 'child-got-sigterm');
    const script = `trap ': > ${terminated}; exit 143' TERM; : > ${ready}; while :; do sleep 0.05; done`;
    const { body } = await api.createJob({ task: 'exec', runAt: new Date().toISOString(), payload: { argv: [SH, '-c', script] } });
    const jobId = body.jobId;
    await waitFor(() => existsSync(ready), { description: 'the exec child running' });

    // DELETE keeps its contract: a claimed job is refused, and the answer says how to stop it.
    const refused = await api.cancelJob(jobId);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(new RegExp(`POST /jobs/${jobId}/abort`));
    expect(refused.body.error.details).toMatchObject({ state: 'CLAIMED', abort: `POST /jobs/${jobId}/abort` });

    const aborted = await api.call('POST', `/jobs/${jobId}/abort`);
    const [run] = await runsOf(jobId);
    expect(aborted.status).toBe(202);
    expect(aborted.body).toMatchObject({
      runId: String(run.id),
      jobId,
      leaseGeneration: 1,
      agentId: 'worker',
      requestedBy: `oncall (token ${writer.token.id})`,
      stopSchedule: false,
    });
    const job = await untilJob(api, jobId, (j) => j.state === 'CANCELLED', 'the job cancelled');
    expect(job.abort).toBeNull();
    expect(existsSync(terminated)).toBe(true);
    const runs = (await api.runs(jobId)).body.runs;
    expect(runs).toEqual([
      expect.objectContaining({ outcome: 'CANCELLED', abortedBy: `oncall (token ${writer.token.id})`, workerId: 'worker' }),
    ]);
    expect(runs[0].error).toMatch(/^aborted by oncall/);
    // Nothing runs any more: a second abort has nothing to stop.
    const again = await api.call<any>('POST', `/jobs/${jobId}/abort`);
    expect(again.status).toBe(409);
    expect(again.body.error.details).toEqual({ state: 'CANCELLED' });
    await expectOneOutcomeEachAndNoOverlap(jobId);
  }, 60_000);

  it('a recurring job goes on to its next occurrence; ?stopSchedule=true ends it', async () => {
    const { api, startAgent } = await cluster();
    await startAgent('worker');
    const { body } = await api.createJob({ task: 'sleep', schedule: '* * * * * *', payload: { seconds: 60 } });
    const jobId = body.jobId;
    const first = await untilJob(api, jobId, (j) => j.state === 'CLAIMED', 'the first occurrence running');
    expect((await api.call('POST', `/jobs/${jobId}/abort?stopSchedule=maybe`)).status).toBe(400);
    expect((await api.call('POST', `/jobs/${jobId}/abort`)).status).toBe(202);
    // The next occurrence is claimed again (every second): a new generation, a fresh attempt budget.
    const second = await untilJob(api, jobId, (j) => j.state === 'CLAIMED' && j.leaseGeneration > first.leaseGeneration, 'the next occurrence running');
    expect(second.attempt).toBe(1);
    expect(new Date(second.occurrenceAt).getTime()).toBeGreaterThan(new Date(first.occurrenceAt).getTime());
    const stopped = await api.call('POST', `/jobs/${jobId}/abort?stopSchedule=true`);
    expect(stopped).toMatchObject({ status: 202, body: { stopSchedule: true, leaseGeneration: second.leaseGeneration } });
    const job = await untilJob(api, jobId, (j) => j.state === 'CANCELLED', 'the schedule ended');
    expect(job.nextRunAt).toBeNull();
    const runs = await expectOneOutcomeEachAndNoOverlap(jobId);
    expect(runs.map((r) => [Number(r.lease_generation), r.outcome])).toEqual([
      [first.leaseGeneration, 'CANCELLED'],
      [second.leaseGeneration, 'CANCELLED'],
    ]);
  }, 60_000);

  it('races completions: every run ends with exactly one outcome, aborted or succeeded', async () => {
    const { api, startAgent } = await cluster();
    await startAgent('worker-a');
    await startAgent('worker-b');
    const ids: string[] = [];
    for (let i = 0; i < 24; i++) {
      const { body } = await api.createJob({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 0.2 + (i % 4) * 0.05 } });
      ids.push(body.jobId);
    }
    // Abort each as soon as it is seen claimed, some right as its handler finishes.
    await Promise.all(
      ids.map(async (jobId, i) => {
        await untilJob(api, jobId, (j) => j.state !== 'DUE', 'claimed', 30_000);
        await new Promise((resolve) => setTimeout(resolve, (i % 6) * 50));
        const answer = await api.call('POST', `/jobs/${jobId}/abort`);
        expect([202, 409]).toContain(answer.status);
      }),
    );
    for (const jobId of ids) {
      const job = await untilJob(api, jobId, (j) => j.state === 'COMPLETED' || j.state === 'CANCELLED', 'settled', 30_000);
      const runs = await expectOneOutcomeEachAndNoOverlap(jobId);
      // A run an agent handed back unstarted ("released before start", docs/api.md: e.g. an assignment no
      // renewal confirmed in time on a loaded machine) never ran and costs no attempt. Of the others: one run,
      // its outcome matching the job's end; an aborted run is never retried.
      const ran = runs.filter((r) => !String(r.error ?? '').startsWith('released before start'));
      expect(ran.map((r) => r.outcome)).toEqual([job.state === 'COMPLETED' ? 'SUCCEEDED' : 'CANCELLED']);
    }
  }, 90_000);

  it('races the lease expiry: an agent paused past its lease never confirms, the expiry decides', async () => {
    const { api, startAgent } = await cluster();
    const paused = await startAgent('paused');
    const { body } = await api.createJob({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 60 } });
    const jobId = body.jobId;
    await untilJob(api, jobId, (j) => j.state === 'CLAIMED', 'claimed by the agent');
    paused.signal('SIGSTOP');
    try {
      expect((await api.call('POST', `/jobs/${jobId}/abort`)).status).toBe(202);
      await untilJob(api, jobId, (j) => j.state === 'CANCELLED', 'settled by the expiry');
      const [run] = await runsOf(jobId);
      expect(run).toMatchObject({ outcome: 'LEASE_EXPIRED', aborted_by: expect.stringMatching(/^oncall/) });
    } finally {
      paused.signal('SIGCONT');
    }
    // The agent wakes, finds its trust window gone and stops the handler; whatever it reports is stale.
    await paused.waitForLine((line) => line.msg === 'lease lost' || line.msg === 'outcome rejected as stale: the lease had expired', 20_000);
    const runs = await expectOneOutcomeEachAndNoOverlap(jobId);
    expect(runs.map((r) => r.outcome)).toEqual(['LEASE_EXPIRED']);
  }, 60_000);

  it('survives a coordinator restart: an abort taken by another coordinator reaches the agent when it reconnects', async () => {
    // A long lease: the agent's lease must outlive the restart, two coordinator starts and the agent's
    // reconnect, which on a loaded machine (a full suite on two cores) took more than 10 s.
    const first = await cluster({ leaseMs: 30_000 });
    const grpcPort = Number(first.coordinator.grpcAddress.split(':')[1]);
    const agent = await first.startAgent('worker');
    const { body } = await first.api.createJob({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 60 } });
    const jobId = body.jobId;
    await untilJob(first.api, jobId, (j) => j.state === 'CLAIMED', 'claimed');
    first.coordinator.proc.signal('SIGKILL');
    await first.coordinator.proc.exited;

    // A second coordinator takes the abort while the agent's coordinator is gone: nobody can revoke it now.
    const other = await startCoordinatorProcess({ databaseUrl: db.url, auth: true, leaseMs: 30_000, name: 'other' });
    const otherApi = restClient(other.httpUrl, first.writer.secret);
    expect((await otherApi.call('POST', `/jobs/${jobId}/abort`)).status).toBe(202);

    // The agent's coordinator comes back on its port; the agent re-announces the lease and learns of the abort.
    await startCoordinatorProcess({ databaseUrl: db.url, auth: true, leaseMs: 30_000, grpcPort, name: 'restarted' });
    await untilJob(otherApi, jobId, (j) => j.state === 'CANCELLED', 'aborted after the restart', 30_000);
    expect((await runsOf(jobId)).map((r) => [r.outcome, r.worker_id])).toEqual([['CANCELLED', 'worker']]);
    expect(agent.lines.some((line) => line.msg === 'run aborted by an operator: stopping it')).toBe(true);
    await expectOneOutcomeEachAndNoOverlap(jobId);
  }, 90_000);

  it('reaches an agent connected to another coordinator at once (NOTIFY), and over gRPC too', async () => {
    const { api, startAgent, writer, coordinator } = await cluster({ leaseMs: 30_000 });
    await startAgent('worker');
    const other = await startCoordinatorProcess({ databaseUrl: db.url, auth: true, leaseMs: 30_000, name: 'other' });
    const { body } = await api.createJob({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 120 } });
    const jobId = body.jobId;
    await untilJob(api, jobId, (j) => j.state === 'CLAIMED', 'claimed');
    const client = createKairosClient({ address: other.grpcAddress, token: writer.secret });
    try {
      const aborted = await client.abortRun(jobId);
      expect(aborted).toMatchObject({ agentId: 'worker', leaseGeneration: 1, stopSchedule: false });
      // The coordinator serving the agent (not the one that took the call) sent the Revoke: it heard the NOTIFY.
      await waitFor(
        async () => (await metricValue(coordinator.httpUrl, 'kairos_abort_revokes_total')) === 1,
        { description: 'the Revoke sent by the agent\'s coordinator' },
      );
      await untilJob(api, jobId, (j) => j.state === 'CANCELLED', 'cancelled');
      const runs = (await client.listRuns(jobId)).runs;
      expect(runs).toEqual([expect.objectContaining({ outcome: 'CANCELLED', abortedBy: `oncall (token ${writer.token.id})` })]);
      await expect(client.abortRun(jobId)).rejects.toMatchObject({ code: 'failed-precondition' });
    } finally {
      client.close();
    }
  }, 60_000);
});
