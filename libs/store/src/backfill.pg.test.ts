/**
 * Backfill at the store, with time pinned: a past range of a recurring job's
 * occurrences runs in order, one at a time, then the regular schedule resumes;
 * cancelling, refusals, and regular occurrences that pass during a backfill.
 */
import { parseCron } from '@kairos/schedule';
import { createTestDatabase, at, jobRow, FIXTURE_HOLDER, type TestDatabase } from '@kairos/testing';
import type { Store } from './store';

const T0 = new Date('2030-01-01T12:00:00.000Z');
const HOUR = 3_600_000;

describe('backfill', () => {
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

  async function hourly(created = at(T0, 1)) {
    const result = await store.jobs.create(
      { namespace: 'default', task: 'noop', cron: parseCron('0 * * * *'), payload: {}, maxAttempts: 1, misfirePolicy: 'skip' },
      created,
    );
    if (result.kind !== 'created') throw new Error('not created');
    return result.job.id;
  }
  async function ledger(id: string) {
    const { rows } = await db.pool.query('SELECT scheduled_for, outcome, reason FROM runs WHERE job_id = $1 ORDER BY id', [id]);
    return rows.map((r) => `${r.scheduled_for.toISOString().slice(11, 16)} ${r.outcome} ${r.reason ?? 'on time'}`);
  }
  /** Claims and completes whatever is due at `now`, one run at a time, each taking `runMs`; returns the clock after. */
  async function runDue(now: Date, runMs: number, maxRuns = 20): Promise<Date> {
    let clock = now;
    for (let i = 0; i < maxRuns; i++) {
      const [claimed] = await store.lease.claimDue({ ...FIXTURE_HOLDER, namespace: 'default', tasks: ['noop'], limit: 1, leaseMs: HOUR, now: clock });
      if (claimed === undefined) return clock;
      clock = new Date(clock.getTime() + runMs);
      await store.lease.complete([{ ...FIXTURE_HOLDER, jobId: claimed.jobId, leaseGeneration: claimed.leaseGeneration, outcome: 'SUCCEEDED' }], clock);
    }
    return clock;
  }

  it('runs the range in order, one at a time, then resumes the regular schedule', async () => {
    const id = await hourly();
    const started = await store.lease.startBackfill('default', id, { from: at(T0, -5 * HOUR), to: at(T0, -2 * HOUR) }, at(T0, 60_000));
    expect(started).toEqual({ kind: 'started', first: at(T0, -5 * HOUR), last: at(T0, -3 * HOUR), count: 3, resumeAt: at(T0, HOUR) });
    expect(await jobRow(db.pool, id)).toMatchObject({ occurrence_at: at(T0, -5 * HOUR), next_run_at: at(T0, 60_000), run_through: at(T0, -3 * HOUR), next_reason: 'backfill' });
    // A second backfill waits for this one.
    expect(await store.lease.startBackfill('default', id, { from: at(T0, -9 * HOUR), to: at(T0, -8 * HOUR) }, at(T0, 60_000))).toMatchObject({ kind: 'refused', conflict: true });
    await runDue(at(T0, 60_000), 60_000);
    expect(await ledger(id)).toEqual(['07:00 SUCCEEDED backfill', '08:00 SUCCEEDED backfill', '09:00 SUCCEEDED backfill']);
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DUE', occurrence_at: at(T0, HOUR), next_run_at: at(T0, HOUR), backfill_resume_at: null, next_reason: null });
  });

  it('regular occurrences that pass during a long backfill follow the overlap policy', async () => {
    const id = await hourly();
    await store.lease.startBackfill('default', id, { from: at(T0, -10 * HOUR), to: at(T0, -8 * HOUR) }, at(T0, 59 * 60_000));
    // Each backfill run takes 50 minutes: 13:00 and 14:00 come due meanwhile (overlap skip).
    await runDue(at(T0, 59 * 60_000), 50 * 60_000, 2);
    expect(await ledger(id)).toEqual([
      '02:00 SUCCEEDED backfill',
      '03:00 SUCCEEDED backfill',
      '13:00 SKIPPED overlap:skip',
      '14:00 SKIPPED overlap:skip',
    ]);
    expect(await jobRow(db.pool, id)).toMatchObject({ occurrence_at: at(T0, 3 * HOUR), backfill_resume_at: null });
  });

  it('cancels: a waiting job goes back to its regular occurrence; a running backfill run finishes first', async () => {
    const waiting = await hourly();
    await store.lease.startBackfill('default', waiting, { from: at(T0, -5 * HOUR), to: at(T0, -1 * HOUR) }, at(T0, 60_000));
    expect(await store.lease.cancelBackfill('default', waiting, at(T0, 61_000))).toEqual({ kind: 'cancelled', finishing: false });
    expect(await jobRow(db.pool, waiting)).toMatchObject({ occurrence_at: at(T0, HOUR), next_run_at: at(T0, HOUR), run_through: null, backfill_resume_at: null, next_reason: null });
    expect(await store.lease.cancelBackfill('default', waiting)).toEqual({ kind: 'none' });

    await db.truncate();
    const running = await hourly();
    await store.lease.startBackfill('default', running, { from: at(T0, -5 * HOUR), to: at(T0, -1 * HOUR) }, at(T0, 60_000));
    const [claimed] = await store.lease.claimDue({ ...FIXTURE_HOLDER, namespace: 'default', tasks: ['noop'], limit: 1, leaseMs: HOUR, now: at(T0, 60_000) });
    expect(await store.lease.cancelBackfill('default', running, at(T0, 90_000))).toEqual({ kind: 'cancelled', finishing: true });
    await store.lease.complete([{ ...FIXTURE_HOLDER, jobId: running, leaseGeneration: claimed!.leaseGeneration, outcome: 'SUCCEEDED' }], at(T0, 120_000));
    expect(await ledger(running)).toEqual(['07:00 SUCCEEDED backfill']);
    expect(await jobRow(db.pool, running)).toMatchObject({ state: 'DUE', occurrence_at: at(T0, HOUR), backfill_resume_at: null });
  });

  it('refuses a one-off, running or paused job, a future or empty range, and too many occurrences', async () => {
    const id = await hourly();
    const now = at(T0, 60_000);
    expect(await store.lease.startBackfill('default', id, { from: at(T0, -HOUR), to: at(T0, HOUR) }, now)).toMatchObject({ kind: 'refused', field: 'to', conflict: false });
    expect(await store.lease.startBackfill('default', id, { from: at(T0, -30 * 60_000), to: at(T0, -1) }, now)).toMatchObject({ kind: 'refused', field: 'from' });
    const everySecond = await store.jobs.create(
      { namespace: 'default', task: 'noop', cron: parseCron('* * * * * *'), payload: {}, maxAttempts: 1, misfirePolicy: 'fire-once' },
      now,
    );
    const secondsId = everySecond.kind === 'created' ? everySecond.job.id : '';
    expect(await store.lease.startBackfill('default', secondsId, { from: at(T0, -3 * HOUR), to: at(T0, -1) }, now)).toMatchObject({ kind: 'refused', field: 'to' });
    await store.lease.pause('default', id);
    expect(await store.lease.startBackfill('default', id, { from: at(T0, -3 * HOUR), to: at(T0, -HOUR) }, now)).toMatchObject({ kind: 'refused', state: 'PAUSED', conflict: true });
    expect(await store.lease.startBackfill('other', id, { from: at(T0, -3 * HOUR), to: at(T0, -HOUR) }, now)).toEqual({ kind: 'not-found' });
    expect((await jobRow(db.pool, id)).backfill_resume_at).toBeNull();
  });
});
