/**
 * Edges where the policies meet each other: cancel-other and late or planned
 * runs, an edit in the middle of a planned stretch, a backfill asked while late
 * runs are pending, an old catch-up occurrence and the claim, a planned run
 * that waited. Time is pinned throughout.
 */
import { parseCron } from '@kairos/schedule';
import { createTestDatabase, at, jobRow, FIXTURE_HOLDER, type TestDatabase } from '@kairos/testing';
import type { Store } from './store';

const T0 = new Date('2030-03-01T00:00:00.000Z');
const MINUTE = 60_000;
const HOUR = 3_600_000;

describe('where the policies meet', () => {
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

  async function create(expression: string, fields: Record<string, unknown> = {}, now = T0): Promise<string> {
    const result = await store.jobs.create(
      { namespace: 'default', task: 'noop', cron: parseCron(expression), payload: {}, maxAttempts: 1, misfirePolicy: 'fire-once', ...fields },
      now,
    );
    if (result.kind !== 'created') throw new Error('not created');
    return result.job.id;
  }
  const claim = async (now: Date) =>
    (await store.lease.claimDue({ ...FIXTURE_HOLDER, namespace: 'default', tasks: ['noop'], limit: 1, leaseMs: 24 * HOUR, now }))[0];
  const succeed = (jobId: string, leaseGeneration: number, now: Date) =>
    store.lease.complete([{ ...FIXTURE_HOLDER, jobId, leaseGeneration, outcome: 'SUCCEEDED' }], now);
  async function ledger(id: string) {
    const { rows } = await db.pool.query('SELECT scheduled_for, outcome, reason FROM runs WHERE job_id = $1 ORDER BY scheduled_for, id', [id]);
    return rows.map((r) => `${r.scheduled_for.toISOString().slice(11, 16)} ${r.outcome} ${r.reason ?? 'on time'}`);
  }

  it('cancel-other aborts only a run overlapped by an occurrence due after it started, fenced on its lease', async () => {
    const id = await create('* * * * *', { overlapPolicy: 'cancel-other' });
    // Claimed 90 s late: the 00:01 occurrence passed before the run started (lateness, not overlap).
    const claimed = await claim(at(T0, 90_000));
    expect(await store.lease.abortOverlapped({ now: at(T0, 100_000) })).toEqual({ aborted: 0 });
    // 00:02 comes due while it runs: that one overlaps.
    expect(await store.lease.abortOverlapped({ now: at(T0, 2 * MINUTE + 1) })).toEqual({ aborted: 1 });
    expect((await jobRow(db.pool, id)).abort_requested_by).toBe('overlap policy cancel-other');
    // An abort fenced on another generation finds nothing to abort.
    expect(await store.lease.abort('default', id, { by: 'x', stopSchedule: false, leaseGeneration: claimed!.leaseGeneration + 1 })).toEqual({
      kind: 'not-running',
      state: 'CLAIMED',
    });
  });

  it('cancel-other leaves the runs of a backfill alone', async () => {
    const id = await create('0 * * * *', { overlapPolicy: 'cancel-other' }, at(T0, 1));
    await store.lease.startBackfill('default', id, { from: at(T0, -5 * HOUR), to: at(T0, -2 * HOUR) }, at(T0, MINUTE));
    await claim(at(T0, MINUTE));
    expect(await store.lease.abortOverlapped({ now: at(T0, 2 * MINUTE) })).toEqual({ aborted: 0 });
  });

  it('an edit of the schedule in the middle of a planned stretch ends the stretch: nothing is replayed', async () => {
    const id = await create('0 * * * *', { misfirePolicy: 'catch-up' }, at(T0, 1));
    // Down for four hours: the reaper pass plans 01:00..04:00, then the first runs.
    expect(await store.lease.skipMisfired({ now: at(T0, 4 * HOUR + 30 * MINUTE) })).toEqual({ skipped: 0, occurrences: 0 });
    const first = await claim(at(T0, 4 * HOUR + 30 * MINUTE));
    expect(first!.scheduledForMs).toBe(at(T0, HOUR).getTime());
    await succeed(id, first!.leaseGeneration, at(T0, 4 * HOUR + 31 * MINUTE));
    expect(await jobRow(db.pool, id)).toMatchObject({ occurrence_at: at(T0, 2 * HOUR), run_through: at(T0, 4 * HOUR), next_reason: 'misfire:catch-up' });
    // While 02:00 runs, the schedule becomes every minute.
    const second = await claim(at(T0, 4 * HOUR + 31 * MINUTE));
    await store.lease.edit('default', id, { schedule: parseCron('* * * * *') }, { now: at(T0, 4 * HOUR + 32 * MINUTE) });
    await succeed(id, second!.leaseGeneration, at(T0, 4 * HOUR + 34 * MINUTE));
    // The minutes from the edit on came due while it ran (overlap skip); none from 02:01 to 04:00 is replayed.
    expect(await jobRow(db.pool, id)).toMatchObject({ occurrence_at: at(T0, 4 * HOUR + 35 * MINUTE), run_through: null, next_reason: null });
    // (01:00 was the occurrence the job was waiting for: it ran late, then catch-up planned the rest.)
    expect(await ledger(id)).toEqual(['01:00 SUCCEEDED on time', '02:00 SUCCEEDED misfire:catch-up', '04:32 SKIPPED overlap:skip', '04:33 SKIPPED overlap:skip', '04:34 SKIPPED overlap:skip']);
  });

  it('a backfill waits for late runs a policy planned, so none of them is lost', async () => {
    const id = await create('0 * * * *', { misfirePolicy: 'catch-up' }, at(T0, 1));
    const first = await claim(at(T0, 3 * HOUR + 1));
    await succeed(id, first!.leaseGeneration, at(T0, 3 * HOUR + 2));
    expect((await jobRow(db.pool, id)).next_reason).toBe('misfire:catch-up');
    expect(await store.lease.startBackfill('default', id, { from: at(T0, -5 * HOUR), to: at(T0, -2 * HOUR) }, at(T0, 3 * HOUR + 3))).toMatchObject({
      kind: 'refused',
      conflict: true,
      message: expect.stringContaining('late runs pending'),
    });
  });

  it('the claim leaves a catch-up occurrence older than the window to the reaper pass, which moves it into the window', async () => {
    const id = await create('0 * * * *', { misfirePolicy: 'catch-up', catchupWindowMs: HOUR }, at(T0, 1));
    const back = at(T0, 72 * HOUR + 30 * MINUTE);
    expect(await claim(back)).toBeUndefined();
    expect(await store.lease.skipMisfired({ now: back })).toEqual({ skipped: 1, occurrences: 71 });
    expect(await jobRow(db.pool, id)).toMatchObject({ occurrence_at: at(T0, 72 * HOUR), next_reason: 'misfire:catch-up' });
    expect((await claim(back))!.scheduledForMs).toBe(at(T0, 72 * HOUR).getTime());
  });

  it('a planned run that waited to be claimed starts a new busy stretch: what passed while it waited was missed, not overlapped', async () => {
    const id = await create('*/10 * * * *', { overlapPolicy: 'buffer-one', misfirePolicy: 'catch-up' }, at(T0, -1));
    // 00:00 runs 15 minutes: 00:10 is buffered and due at 00:15.
    const first = await claim(T0);
    await succeed(id, first!.leaseGeneration, at(T0, 15 * MINUTE));
    expect(await jobRow(db.pool, id)).toMatchObject({ occurrence_at: at(T0, 10 * MINUTE), next_reason: 'overlap:buffer-one' });
    // No agent until 01:00; the buffered run then takes a minute.
    const second = await claim(at(T0, HOUR));
    await succeed(id, second!.leaseGeneration, at(T0, HOUR + MINUTE));
    // 00:20..00:50 passed while the job waited: late, so catch-up runs them all (and 01:00 too), not overlap skip.
    expect(await jobRow(db.pool, id)).toMatchObject({ occurrence_at: at(T0, 20 * MINUTE), run_through: at(T0, HOUR), next_reason: 'misfire:catch-up' });
  });
});
