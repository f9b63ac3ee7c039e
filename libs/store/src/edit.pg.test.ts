/**
 * Editing a job in place, at the store: rescheduling of waiting jobs, edits
 * of running ones applied from the next claim, versions, and the refusals.
 */
import { parseCron } from '@kairos/schedule';
import { createTestDatabase, insertJob, at, jobRow, runRows, FIXTURE_HOLDER, type TestDatabase } from '@kairos/testing';
import type { Store } from './store';

const T0 = new Date('2030-01-01T00:00:00.000Z');

describe('editing a job', () => {
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


  it('reschedules a waiting job from now on a new schedule, with a fresh attempt budget, and bumps the version', async () => {
    const id = await insertJob(db.pool, { schedule: '0 0 * * *', occurrenceAt: at(T0, 86_400_000), attempt: 2 });
    const result = await store.lease.edit('default', id, { schedule: parseCron('*/10 * * * *', 'Europe/Berlin') }, { now: at(T0, 61_000) });
    expect(result).toEqual({ kind: 'updated', version: 2, appliesFrom: 'now' });
    expect(await jobRow(db.pool, id)).toMatchObject({
      schedule: '*/10 * * * *',
      timezone: 'Europe/Berlin',
      occurrence_at: at(T0, 600_000),
      next_run_at: at(T0, 600_000),
      attempt: 0,
      version: 2,
      state: 'DUE',
    });
  });

  it('turns a one-off job recurring and back, and changes plain fields without touching timing', async () => {
    const id = await insertJob(db.pool, { runAt: at(T0, 5000) });
    await store.lease.edit('default', id, { schedule: parseCron('0 * * * *') }, { now: T0 });
    expect(await jobRow(db.pool, id)).toMatchObject({ schedule: '0 * * * *', run_at: null, occurrence_at: T0 });
    await store.lease.edit('default', id, { runAt: at(T0, 7000) }, { now: T0 });
    expect(await jobRow(db.pool, id)).toMatchObject({ schedule: null, run_at: at(T0, 7000), next_run_at: at(T0, 7000), timezone: 'UTC' });
    await store.lease.edit('default', id, { payload: { v: 2 }, name: 'renamed', maxAttempts: 7, timeoutMs: 9000 }, { now: T0 });
    expect(await jobRow(db.pool, id)).toMatchObject({ payload: { v: 2 }, name: 'renamed', max_attempts: 7, timeout_ms: 9000, next_run_at: at(T0, 7000), version: 4 });
  });

  it('refuses an edit against another version, changing nothing', async () => {
    const id = await insertJob(db.pool, { runAt: T0 });
    await store.lease.edit('default', id, { name: 'first' });
    const before = await jobRow(db.pool, id);
    expect(await store.lease.edit('default', id, { name: 'second' }, { expectedVersion: 1 })).toEqual({ kind: 'version-mismatch', version: 2 });
    expect(await jobRow(db.pool, id)).toEqual(before);
    expect(await store.lease.edit('default', id, { name: 'second' }, { expectedVersion: 2 })).toMatchObject({ kind: 'updated', version: 3 });
  });

  it('a running job keeps its run; a schedule change plans its next occurrence from the edit, not from the served one', async () => {
    const id = await insertJob(db.pool, {
      state: 'CLAIMED',
      schedule: '0 * * * *',
      occurrenceAt: T0,
      nextRunAt: T0,
      leaseGeneration: 1,
      leaseUntil: at(T0, 3_600_000),
    });
    // At 00:30 the schedule becomes every minute; the run ends at 00:45.
    const edited = await store.lease.edit('default', id, { schedule: parseCron('* * * * *'), payload: { v: 2 } }, { now: at(T0, 1_800_000) });
    expect(edited).toMatchObject({ kind: 'updated', appliesFrom: 'next-claim' });
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'CLAIMED', occurrence_at: T0, rescheduled_at: at(T0, 1_800_000) });
    await db.pool.query('UPDATE jobs SET run_started_at = $1 WHERE id = $2', [T0, id]);
    await store.lease.complete([{ ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 1, outcome: 'SUCCEEDED' }], at(T0, 2_700_000));
    // The minutes that came due while it ran count from the edit (00:30), not from 00:01: 16 SKIPPED (overlap skip).
    const after = await jobRow(db.pool, id);
    expect(after).toMatchObject({ state: 'DUE', occurrence_at: at(T0, 2_760_000), rescheduled_at: null });
    const skipped = (await runRows(db.pool, id)).filter((run) => run.outcome === 'SKIPPED');
    expect(skipped).toHaveLength(16);
    expect(skipped[0]).toMatchObject({ scheduled_for: at(T0, 1_800_000), reason: 'overlap:skip' });
  });

  it("refuses a running job's runAt, and one-off-only or recurring-only fields on the wrong kind", async () => {
    const running = await insertJob(db.pool, { state: 'CLAIMED', runAt: T0, leaseUntil: at(T0, 10_000) });
    expect(await store.lease.edit('default', running, { runAt: at(T0, 1) })).toMatchObject({ kind: 'refused', field: 'runAt', state: 'CLAIMED' });
    const oneOff = await insertJob(db.pool, { runAt: T0 });
    expect(await store.lease.edit('default', oneOff, { startJitterMs: 10 })).toMatchObject({ kind: 'refused', field: 'jitterMs' });
    expect(await store.lease.edit('default', oneOff, { pauseOnFailure: true })).toMatchObject({ kind: 'refused', field: 'pauseOnFailure' });
    expect(await store.lease.edit('other', oneOff, { name: 'x' })).toEqual({ kind: 'not-found' });
    expect((await jobRow(db.pool, oneOff)).version).toBe(1);
  });

  it('edits a finished job without reviving it', async () => {
    const dead = await insertJob(db.pool, { state: 'DEAD', runAt: T0 });
    expect(await store.lease.edit('default', dead, { payload: { fixed: true }, runAt: at(T0, 1000) })).toMatchObject({ kind: 'updated' });
    expect(await jobRow(db.pool, dead)).toMatchObject({ state: 'DEAD', next_run_at: null, payload: { fixed: true } });
  });
});
