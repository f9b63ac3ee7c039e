/**
 * A run's row is written once, when it ends (docs/decisions/0027): the claim
 * reserves its id on the job row, the `runs` view shows it RUNNING meanwhile,
 * and each ending (failure, expiry, release, any run of a recurring job)
 * inserts it whole into `ended_runs`. A one-off job's successful run stays on
 * its COMPLETED row instead (docs/decisions/0033), and the view lists it from
 * there.
 */
import { copyFile, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'pg';
import { ENV_ADMIN_URL, at, createTestDatabase, insertJob, jobRow, runRows, withClient, withDatabase, type TestDatabase } from '@kairos/testing';
import { migrate, MIGRATIONS_DIR } from './migrate';
import type { Store } from './store';

const T0 = new Date('2030-01-01T00:00:00.000Z');
const LEASE_MS = 10_000;
const CLAIM = { namespace: 'default', tokenId: null, owner: 'w1', tasks: ['noop'], leaseMs: LEASE_MS } as const;
const HOLDER = { owner: 'w1', tokenId: null };

describe('run rows', () => {
  let db: TestDatabase;
  let store: Store;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = db.createStore();
  });
  afterAll(async () => {
    await db.drop();
  });
  beforeEach(async () => {
    await db.truncate();
  });

  const storedRuns = async (jobId: string) => (await db.pool.query('SELECT * FROM ended_runs WHERE job_id = $1 ORDER BY id', [jobId])).rows;

  it('a claim writes no run row; the run shows RUNNING under the id it was given, then SUCCEEDED from the job row', async () => {
    const id = await insertJob(db.pool, { nextRunAt: at(T0, -100), occurrenceAt: at(T0, -100) });
    const [claimed] = await store.lease.claimDue({ ...CLAIM, limit: 1, now: T0 });
    expect(await storedRuns(id)).toEqual([]);
    const running = await runRows(db.pool, id);
    expect(running).toEqual([
      expect.objectContaining({ id: String(claimed!.runId), outcome: 'RUNNING', worker_id: 'w1', attempt: 1, finished_at: null, started_at: T0 }),
    ]);
    // The public listing reads the same view.
    expect((await store.runs.list('default', id))!.map((run) => [run.runId, run.outcome])).toEqual([[claimed!.runId, 'RUNNING']]);

    await store.lease.complete([{ ...HOLDER, jobId: id, leaseGeneration: 1, outcome: 'SUCCEEDED' }], at(T0, 250));
    // One row version of the job and no run row: the run is read from the COMPLETED job.
    expect(await storedRuns(id)).toEqual([]);
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'COMPLETED', lease_owner: null, run_worker_id: 'w1', run_finished_at: at(T0, 250) });
    const ended = await runRows(db.pool, id);
    expect(ended).toEqual([
      expect.objectContaining({ id: String(claimed!.runId), outcome: 'SUCCEEDED', worker_id: 'w1', attempt: 1, lease_generation: '1' }),
    ]);
    expect(ended[0]).toMatchObject({ started_at: T0, finished_at: at(T0, 250), scheduled_for: at(T0, -100), error: null, aborted_by: null });
    expect((await store.runs.list('default', id))!).toEqual([
      expect.objectContaining({ runId: claimed!.runId, outcome: 'SUCCEEDED', workerId: 'w1', startedAt: T0, finishedAt: at(T0, 250) }),
    ]);
    // A second report of the same lease is stale and changes nothing.
    expect(await store.lease.complete([{ ...HOLDER, jobId: id, leaseGeneration: 1, outcome: 'SUCCEEDED' }], at(T0, 300))).toEqual([
      expect.objectContaining({ kind: 'stale' }),
    ]);
    expect(await runRows(db.pool, id)).toEqual(ended);
  });

  it("a COMPLETED job's run reads the same after an edit, a cancel and a trigger, and goes with the job", async () => {
    const id = await insertJob(db.pool, { nextRunAt: at(T0, -100), occurrenceAt: at(T0, -100) });
    await store.lease.claimDue({ ...CLAIM, limit: 1, now: T0 });
    await store.lease.complete([{ ...HOLDER, jobId: id, leaseGeneration: 1, outcome: 'SUCCEEDED' }], at(T0, 250));
    const ended = await runRows(db.pool, id);
    expect(ended).toHaveLength(1);

    expect(await store.lease.edit('default', id, { runAt: at(T0, 60_000), name: 'renamed' }, { now: at(T0, 500) })).toMatchObject({
      kind: 'updated',
    });
    expect(await store.lease.cancel('default', id, at(T0, 600))).toEqual({ kind: 'finished', state: 'COMPLETED' });
    expect(await store.lease.trigger('default', id, at(T0, 700))).toEqual({ kind: 'conflict', state: 'COMPLETED' });
    expect(await runRows(db.pool, id)).toEqual(ended);

    // Job retention deletes the finished job, and its run with it.
    const swept = await store.retention.deleteFinishedJobs({ olderThanMs: 1000, now: at(T0, 10_000) });
    expect(swept).toMatchObject({ deletedJobs: 1, deletedRuns: 1 });
    expect(await runRows(db.pool, id)).toEqual([]);
  });

  it('a run of a recurring job and a failed one-off run are still written to ended_runs, once each', async () => {
    const recurring = await insertJob(db.pool, { schedule: '* * * * *', nextRunAt: T0, occurrenceAt: T0 });
    const failing = await insertJob(db.pool, { nextRunAt: at(T0, -100), maxAttempts: 1 });
    await store.lease.claimDue({ ...CLAIM, limit: 2, now: T0 });
    await store.lease.complete(
      [
        { ...HOLDER, jobId: recurring, leaseGeneration: 1, outcome: 'SUCCEEDED' },
        { ...HOLDER, jobId: failing, leaseGeneration: 1, outcome: 'FAILED', error: 'boom' },
      ],
      at(T0, 100),
    );
    expect((await storedRuns(recurring)).map((run) => run.outcome)).toEqual(['SUCCEEDED']);
    expect((await storedRuns(failing)).map((run) => run.outcome)).toEqual(['FAILED']);
    expect((await runRows(db.pool, recurring)).map((run) => run.outcome)).toEqual(['SUCCEEDED']);
    expect((await runRows(db.pool, failing)).map((run) => run.outcome)).toEqual(['FAILED']);
    expect(await jobRow(db.pool, recurring)).toMatchObject({ run_finished_at: null });
  });

  it('a run an earlier version completed (its row in ended_runs, none on the job) is listed once', async () => {
    const id = await insertJob(db.pool, { nextRunAt: at(T0, -100), occurrenceAt: at(T0, -100) });
    const [claimed] = await store.lease.claimDue({ ...CLAIM, limit: 1, now: T0 });
    // What a coordinator before migration 0018 wrote for a successful one-off run.
    await db.pool.query(
      `WITH done AS (
         UPDATE jobs j SET state = 'COMPLETED', next_run_at = NULL, lease_until = NULL, lease_owner = NULL, lease_token = NULL
         WHERE id = $1 RETURNING j.id, j.run_id, j.attempt, j.lease_generation, j.occurrence_at, j.run_started_at, j.next_reason
       )
       INSERT INTO ended_runs (id, job_id, attempt, lease_generation, scheduled_for, worker_id, started_at, finished_at, outcome, reason)
       OVERRIDING SYSTEM VALUE
       SELECT run_id, id, attempt, lease_generation, occurrence_at, 'w1', run_started_at, $2, 'SUCCEEDED', next_reason FROM done`,
      [id, at(T0, 250)],
    );
    expect(await runRows(db.pool, id)).toEqual([
      expect.objectContaining({ id: String(claimed!.runId), outcome: 'SUCCEEDED', worker_id: 'w1', finished_at: at(T0, 250) }),
    ]);
  });

  it('a failure, an expiry and a release before start each write their run once, with the values of the claim', async () => {
    const failing = await insertJob(db.pool, { nextRunAt: at(T0, -300) });
    const expiring = await insertJob(db.pool, { nextRunAt: at(T0, -200) });
    const released = await insertJob(db.pool, { nextRunAt: at(T0, -100) });
    const claims = await store.lease.claimDue({ ...CLAIM, limit: 3, now: T0 });
    const runIdOf = (jobId: string) => claims.find((claim) => claim.jobId === jobId)!.runId;

    await store.lease.complete([{ ...HOLDER, jobId: failing, leaseGeneration: 1, outcome: 'FAILED', error: 'boom' }], at(T0, 100));
    await store.lease.release([{ ...HOLDER, jobId: released, leaseGeneration: 1 }], 'agent draining', at(T0, 100));
    await store.lease.reapExpired({ now: at(T0, LEASE_MS + 1) });

    expect(await storedRuns(failing)).toEqual([
      expect.objectContaining({ id: String(runIdOf(failing)), attempt: 1, outcome: 'FAILED', error: 'boom', worker_id: 'w1', started_at: T0 }),
    ]);
    expect(await storedRuns(expiring)).toEqual([
      expect.objectContaining({ id: String(runIdOf(expiring)), attempt: 1, outcome: 'LEASE_EXPIRED', worker_id: 'w1', finished_at: at(T0, LEASE_MS + 1) }),
    ]);
    expect(await storedRuns(released)).toEqual([
      expect.objectContaining({ id: String(runIdOf(released)), outcome: 'CANCELLED', error: 'released before start: agent draining' }),
    ]);
    // The failed and expired jobs are DUE again for their retry; the released one did not spend its attempt.
    expect((await jobRow(db.pool, failing)).state).toBe('DUE');
    expect((await jobRow(db.pool, released)).attempt).toBe(0);
    // No CLAIMED job is left, so nothing reads as RUNNING.
    expect((await db.pool.query("SELECT count(*)::int AS n FROM runs WHERE outcome = 'RUNNING'")).rows[0].n).toBe(0);
  });

  it("the database refuses a RUNNING row, a CLAIMED job without its run, and an earlier version's writes to runs", async () => {
    const id = await insertJob(db.pool, {});
    await expect(
      db.pool.query(
        `INSERT INTO ended_runs (job_id, attempt, lease_generation, scheduled_for, started_at, finished_at, outcome)
         VALUES ($1, 1, 1, now(), now(), now(), 'RUNNING')`,
        [id],
      ),
    ).rejects.toThrow(/ended_runs_never_running/);
    await expect(
      db.pool.query("UPDATE jobs SET state = 'CLAIMED', lease_owner = 'w', lease_until = now(), lease_generation = 1 WHERE id = $1", [id]),
    ).rejects.toThrow(/jobs_claimed_has_run/);
    // What an earlier coordinator's ending ran: it fails, so no run can end without its row (migration 0017).
    await expect(db.pool.query("UPDATE runs SET outcome = 'SUCCEEDED', finished_at = now() WHERE job_id = $1", [id])).rejects.toThrow(
      /cannot update view "runs"/,
    );
  });
});

describe('migration 0017', () => {
  it('moves runs in progress onto their jobs and closes a RUNNING row no lease holds', async () => {
    const adminUrl = process.env[ENV_ADMIN_URL]!;
    const name = `kairos_m17_${process.pid}_${Date.now()}`;
    const before = await mkdtemp(path.join(os.tmpdir(), 'kairos-m17-'));
    await withClient(adminUrl, (client) => client.query(`CREATE DATABASE ${name}`));
    const pool = new Pool({ connectionString: withDatabase(adminUrl, name), max: 2 });
    try {
      for (const file of await readdir(MIGRATIONS_DIR)) {
        if (file < '0017') await copyFile(path.join(MIGRATIONS_DIR, file), path.join(before, file));
      }
      await migrate(pool, before);
      const { rows } = await pool.query(
        `INSERT INTO jobs (task, run_at, state, occurrence_at, lease_until, lease_owner, lease_generation, attempt)
         VALUES ('noop', $1, 'CLAIMED', $1, $1::timestamptz + interval '1 minute', 'w1', 2, 2), ('noop', $1, 'COMPLETED', $1, NULL, NULL, 1, 1)
         RETURNING id`,
        [T0],
      );
      const [claimed, completed] = rows.map((row) => row.id as string);
      await pool.query(
        `INSERT INTO runs (job_id, attempt, lease_generation, scheduled_for, worker_id, started_at, finished_at, outcome) VALUES
           ($1, 1, 1, $3, 'w0', $3, $3::timestamptz + interval '1 s', 'FAILED'),
           ($1, 2, 2, $3, 'w1', $3::timestamptz + interval '5 s', NULL, 'RUNNING'),
           ($2, 1, 1, $3, 'w1', $3, NULL, 'RUNNING')`,
        [claimed, completed, T0],
      );
      const running = (await pool.query("SELECT id FROM runs WHERE job_id = $1 AND outcome = 'RUNNING'", [claimed])).rows[0].id;

      expect(await migrate(pool)).toContain('0017_run_row_at_settlement');
      expect((await pool.query('SELECT run_id, run_started_at FROM jobs WHERE id = $1', [claimed])).rows[0]).toEqual({
        run_id: running,
        run_started_at: at(T0, 5000),
      });
      const history = await pool.query('SELECT id, job_id, outcome, worker_id FROM runs ORDER BY id');
      expect(history.rows.map((row) => [row.job_id, row.outcome])).toEqual([
        [claimed, 'FAILED'],
        [claimed, 'RUNNING'],
        [completed, 'LEASE_EXPIRED'],
      ]);
      expect(history.rows[1]).toMatchObject({ id: running, worker_id: 'w1' });
      expect((await pool.query("SELECT count(*)::int AS n FROM ended_runs WHERE outcome = 'RUNNING'")).rows[0].n).toBe(0);
    } finally {
      await pool.end();
      await withClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
      await rm(before, { recursive: true, force: true });
    }
  });
});
