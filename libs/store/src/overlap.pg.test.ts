/**
 * The overlap and catch-up policies end to end at the store, with time
 * pinned: a recurring job in Europe/Berlin across the spring-forward of
 * 28 March 2027, whose runs take 30 minutes while its occurrences are 20
 * minutes apart, driven through claim and settlement under each policy. The
 * ledger (every run and SKIPPED row, with the policy that decided it) is the
 * observable, and each one is checked in full.
 *
 * Schedule '*\/20 1-2 * * *': 01:00, 01:20, 01:40 CET (00:00Z, 00:20Z, 00:40Z)
 * and 02:00, 02:20, 02:40, which do not exist that day and fire shifted by the
 * gap, at 03:00, 03:20, 03:40 CEST (01:00Z, 01:20Z, 01:40Z).
 */
import { parseCron, previewOccurrences, type OverlapPolicy } from '@kairos/schedule';
import { createTestDatabase, type TestDatabase } from '@kairos/testing';
import type { Store } from './store';

const SCHEDULE = parseCron('*/20 1-2 * * *', 'Europe/Berlin');
/** The job is created just before the first occurrence of the day. */
const CREATED = new Date('2027-03-27T23:59:00Z');
/** Past the day's last occurrence (01:40Z) and its run. */
const END = new Date('2027-03-28T02:30:00Z');
const RUN_MS = 30 * 60_000;
const HOLDER = { owner: 'agent-fixture', tokenId: null };

/** "HH:MM" in UTC, for compact ledgers. */
const hhmm = (date: Date) => date.toISOString().slice(11, 16);

describe('overlap policies across the Berlin spring-forward (runs of 30 min, occurrences 20 min apart)', () => {
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

  it('previews the day: the three occurrences after 02:00 are marked as shifted by the gap', () => {
    const preview = previewOccurrences(SCHEDULE, CREATED, 6);
    expect(preview.map((o) => `${hhmm(o.at)}Z ${o.local.slice(11, 16)}${o.offset} ${o.dst ?? '-'}`)).toEqual([
      '00:00Z 01:00+01:00 -',
      '00:20Z 01:20+01:00 -',
      '00:40Z 01:40+01:00 -',
      '01:00Z 03:00+02:00 gap-shifted',
      '01:20Z 03:20+02:00 gap-shifted',
      '01:40Z 03:40+02:00 gap-shifted',
    ]);
  });

  /**
   * Runs the job until END: each claim happens as soon as the job is due and
   * the previous run has ended; each run takes RUN_MS, unless the reaper's
   * cancel-other pass aborts it when the next occurrence comes due (the agent
   * then reports CANCELLED at once). Returns the ledger.
   */
  async function drive(overlap: OverlapPolicy): Promise<string[]> {
    const created = await store.jobs.create(
      { namespace: 'default', task: 'noop', cron: SCHEDULE, payload: {}, maxAttempts: 1, misfirePolicy: 'fire-once', overlapPolicy: overlap },
      CREATED,
    );
    if (created.kind !== 'created') throw new Error('not created');
    const id = created.job.id;
    let clock = CREATED;
    for (let step = 0; step < 20; step++) {
      const { rows } = await db.pool.query('SELECT next_run_at, occurrence_at FROM jobs WHERE id = $1', [id]);
      const due = rows[0].next_run_at as Date;
      if ((rows[0].occurrence_at as Date).getTime() >= END.getTime()) break;
      clock = new Date(Math.max(clock.getTime(), due.getTime()));
      const [claimed] = await store.lease.claimDue({ ...HOLDER, namespace: 'default', tasks: ['noop'], limit: 1, leaseMs: 3_600_000, now: clock });
      if (claimed === undefined) throw new Error(`nothing claimable at ${clock.toISOString()}`);
      let ended = new Date(clock.getTime() + RUN_MS);
      let outcome: 'SUCCEEDED' | 'CANCELLED' = 'SUCCEEDED';
      if (overlap === 'cancel-other') {
        // The reaper's pass when the next occurrence comes due.
        const following = previewOccurrences(SCHEDULE, new Date(claimed.scheduledForMs + 1), 1)[0]!.at;
        if (following.getTime() < ended.getTime()) {
          const { aborted } = await store.lease.abortOverlapped({ now: following });
          expect(aborted).toBe(1);
          ended = following;
          outcome = 'CANCELLED';
        }
      }
      await store.lease.complete([{ ...HOLDER, jobId: id, leaseGeneration: claimed.leaseGeneration, outcome }], ended);
      clock = ended;
    }
    const { rows } = await db.pool.query(
      `SELECT scheduled_for, started_at, finished_at, outcome, reason, aborted_by FROM runs WHERE job_id = $1 ORDER BY scheduled_for, id`,
      [id],
    );
    return rows.map((r) =>
      [
        hhmm(r.scheduled_for),
        r.outcome,
        r.started_at === null ? '' : `${hhmm(r.started_at)}-${hhmm(r.finished_at)}`,
        r.reason ?? 'on time',
        r.aborted_by ?? '',
      ]
        .filter((part) => part !== '')
        .join(' '),
    );
  }

  it('skip (default): what comes due while a run runs is skipped', async () => {
    expect(await drive('skip')).toEqual([
      '00:00 SUCCEEDED 00:00-00:30 on time',
      '00:20 SKIPPED overlap:skip',
      '00:40 SUCCEEDED 00:40-01:10 on time',
      '01:00 SKIPPED overlap:skip',
      '01:20 SUCCEEDED 01:20-01:50 on time',
      '01:40 SKIPPED overlap:skip',
    ]);
  });

  it('buffer-one: the first that came due runs when the run ends, the rest are skipped', async () => {
    expect(await drive('buffer-one')).toEqual([
      '00:00 SUCCEEDED 00:00-00:30 on time',
      '00:20 SUCCEEDED 00:30-01:00 overlap:buffer-one',
      '00:40 SUCCEEDED 01:00-01:30 overlap:buffer-one',
      '01:00 SKIPPED overlap:buffer-one',
      '01:20 SUCCEEDED 01:30-02:00 overlap:buffer-one',
      '01:40 SUCCEEDED 02:00-02:30 overlap:buffer-one',
    ]);
  });

  it('buffer-all: every occurrence runs, one at a time, in order', async () => {
    expect(await drive('buffer-all')).toEqual([
      '00:00 SUCCEEDED 00:00-00:30 on time',
      '00:20 SUCCEEDED 00:30-01:00 overlap:buffer-all',
      '00:40 SUCCEEDED 01:00-01:30 overlap:buffer-all',
      '01:00 SUCCEEDED 01:30-02:00 overlap:buffer-all',
      '01:20 SUCCEEDED 02:00-02:30 overlap:buffer-all',
      '01:40 SUCCEEDED 02:30-03:00 overlap:buffer-all',
    ]);
  });

  it('catch-up after an outage: every missed occurrence runs in order, those older than the window are skipped', async () => {
    const created = await store.jobs.create(
      { namespace: 'default', task: 'noop', cron: SCHEDULE, payload: {}, maxAttempts: 1, misfirePolicy: 'catch-up', catchupWindowMs: 50 * 60_000 },
      CREATED,
    );
    if (created.kind !== 'created') throw new Error('not created');
    const id = created.job.id;
    // Nothing could run until 01:45Z (an outage). The reaper's pass moves the job into the window (from 00:55Z).
    const back = new Date('2027-03-28T01:45:00Z');
    expect(await store.lease.skipMisfired({ now: back })).toEqual({ skipped: 1, occurrences: 3 });
    let clock = back;
    for (let step = 0; step < 10; step++) {
      const [claimed] = await store.lease.claimDue({ ...HOLDER, namespace: 'default', tasks: ['noop'], limit: 1, leaseMs: 3_600_000, now: clock });
      if (claimed === undefined) break;
      clock = new Date(clock.getTime() + 60_000);
      await store.lease.complete([{ ...HOLDER, jobId: id, leaseGeneration: claimed.leaseGeneration, outcome: 'SUCCEEDED' }], clock);
    }
    const { rows } = await db.pool.query('SELECT scheduled_for, outcome, reason FROM runs WHERE job_id = $1 ORDER BY scheduled_for, id', [id]);
    expect(rows.map((r) => `${hhmm(r.scheduled_for)} ${r.outcome} ${r.reason}`)).toEqual([
      '00:00 SKIPPED misfire:catch-up',
      '00:20 SKIPPED misfire:catch-up',
      '00:40 SKIPPED misfire:catch-up',
      '01:00 SUCCEEDED misfire:catch-up',
      '01:20 SUCCEEDED misfire:catch-up',
      '01:40 SUCCEEDED misfire:catch-up',
    ]);
  });

  it('cancel-other: each run is aborted when the next occurrence comes due, and the newest runs', async () => {
    expect(await drive('cancel-other')).toEqual([
      '00:00 CANCELLED 00:00-00:20 on time overlap policy cancel-other',
      '00:20 CANCELLED 00:20-00:40 overlap:cancel-other overlap policy cancel-other',
      '00:40 CANCELLED 00:40-01:00 overlap:cancel-other overlap policy cancel-other',
      '01:00 CANCELLED 01:00-01:20 overlap:cancel-other overlap policy cancel-other',
      '01:20 CANCELLED 01:20-01:40 overlap:cancel-other overlap policy cancel-other',
      '01:40 SUCCEEDED 01:40-02:10 overlap:cancel-other',
    ]);
  });
});
