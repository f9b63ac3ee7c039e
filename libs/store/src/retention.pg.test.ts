/**
 * Retention at the store: which runs and jobs go, which stay, and the job
 * sweep's cursor across batches. Time is pinned.
 */
import { createTestDatabase, insertJob, at, type TestDatabase } from '@kairos/testing';
import type { Store } from './store';

const T0 = new Date('2030-06-01T00:00:00.000Z');
const DAY = 86_400_000;

describe('retention', () => {
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

  async function addRun(jobId: string, finishedAt: Date, generation: number) {
    await db.pool.query(
      `INSERT INTO ended_runs (job_id, attempt, lease_generation, scheduled_for, started_at, finished_at, outcome)
       VALUES ($1, 1, $2, $3, $3, $3, 'SUCCEEDED')`,
      [jobId, generation, finishedAt],
    );
  }
  const count = async (table: string, where = 'true', params: unknown[] = []) =>
    Number((await db.pool.query(`SELECT count(*) FROM ${table} WHERE ${where}`, params)).rows[0].count);

  it('deletes runs finished before the retention, oldest first, never a RUNNING one', async () => {
    const job = await insertJob(db.pool, { schedule: '* * * * *', nextRunAt: T0 });
    let generation = 1;
    for (let i = 0; i < 5; i++) await addRun(job, at(T0, -40 * DAY), generation++);
    // A run in progress has an id among them (reserved by its claim) but no row until it ends (decision 0027).
    const running = await insertJob(db.pool, { state: 'CLAIMED' });
    for (let i = 0; i < 3; i++) await addRun(job, at(T0, -1 * DAY), generation++);
    expect(await store.retention.deleteOldRuns({ olderThanMs: 30 * DAY, scan: 4, now: T0 })).toEqual({ deleted: 4 });
    expect(await store.retention.deleteOldRuns({ olderThanMs: 30 * DAY, scan: 4, now: T0 })).toEqual({ deleted: 1 });
    expect(await store.retention.deleteOldRuns({ olderThanMs: 30 * DAY, scan: 4, now: T0 })).toEqual({ deleted: 0 });
    expect(await count('ended_runs')).toBe(3);
    expect(await count('runs', "outcome = 'RUNNING' AND job_id = $1", [running])).toBe(1);
  });

  it('deletes COMPLETED and CANCELLED jobs past the retention with their runs; keeps DEAD, young and live ones', async () => {
    const old = at(T0, -40 * DAY);
    const completed = await insertJob(db.pool, { state: 'COMPLETED' });
    const cancelled = await insertJob(db.pool, { state: 'CANCELLED', schedule: '0 * * * *', nextRunAt: null });
    const dead = await insertJob(db.pool, { state: 'DEAD' });
    const young = await insertJob(db.pool, { state: 'COMPLETED' });
    const live = await insertJob(db.pool, { schedule: '0 * * * *', nextRunAt: T0 });
    await db.pool.query('UPDATE jobs SET updated_at = $1 WHERE id <> $2', [old, young]);
    await db.pool.query('UPDATE jobs SET updated_at = $1 WHERE id = $2', [at(T0, -DAY), young]);
    for (const id of [completed, cancelled, dead, young, live]) await addRun(id, old, 1);

    // Two jobs per batch: the sweep walks the table from a cursor.
    let after: string | null = null;
    let jobs = 0;
    let runs = 0;
    let batches = 0;
    do {
      const batch = await store.retention.deleteFinishedJobs({ olderThanMs: 30 * DAY, after, scan: 2, now: T0 });
      jobs += batch.deletedJobs;
      runs += batch.deletedRuns;
      after = batch.nextAfter;
      batches++;
    } while (after !== null);
    expect({ jobs, runs, batches }).toEqual({ jobs: 2, runs: 2, batches: 3 });
    const left = (await db.pool.query('SELECT id FROM jobs')).rows.map((r) => r.id).sort();
    expect(left).toEqual([dead, young, live].sort());
    expect(await count('runs', 'job_id = ANY($1::uuid[])', [[completed, cancelled]])).toBe(0);
    expect(await count('runs')).toBe(3);
  });
});
