import { createTestDatabase, insertDueJobs, insertJob, at, jobRow, runRows, FIXTURE_HOLDER, type TestDatabase } from '@kairos/testing';
import { CLAIM_SQL } from './lease';
import type { Store } from './store';

const T0 = new Date('2030-01-01T00:00:00.000Z');
const LEASE_MS = 10_000;
/** Claims in these tests are made for the default namespace by an agent of an --insecure coordinator. */
const CLAIM_SCOPE = { namespace: 'default', tokenId: null };
/** A lease holder: an agent, with the token it connected with (none by default). */
const heldBy = (owner: string, tokenId: string | null = null) => ({ owner, tokenId });

describe('lease statements', () => {
  let db: TestDatabase;
  let store: Store;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = db.createStore({ retry: { backoffBaseMs: 1000, backoffCapMs: 60_000 } });
  });
  afterAll(async () => {
    await db.drop();
  });
  beforeEach(async () => {
    await db.truncate();
  });


  describe('claimDue', () => {
    it('claims due rows of the asked tasks up to the limit, oldest first, with run rows', async () => {
      const early = await insertJob(db.pool, { task: 'a', nextRunAt: at(T0, -3000), payload: { invoice: 7, tags: ['x'] } });
      const later = await insertJob(db.pool, { task: 'a', nextRunAt: at(T0, -1000) });
      await insertJob(db.pool, { task: 'a', nextRunAt: at(T0, -500) });
      const otherTask = await insertJob(db.pool, { task: 'b', nextRunAt: at(T0, -5000) });
      const future = await insertJob(db.pool, { task: 'a', nextRunAt: at(T0, 1) });

      const claimed = await store.lease.claimDue({ ...CLAIM_SCOPE, owner: 'w1', tasks: ['a'], limit: 2, leaseMs: LEASE_MS, now: T0 });

      expect(claimed.map((c) => c.jobId)).toEqual([early, later]);
      expect(claimed[0]).toMatchObject({ attempt: 1, leaseGeneration: 1, leaseRemainingMs: LEASE_MS, task: 'a' });
      expect(claimed[0]!.leaseUntilMs).toBe(T0.getTime() + LEASE_MS);
      // Instants come back as whole epoch milliseconds.
      expect(claimed[0]).toMatchObject({ dueAtMs: at(T0, -3000).getTime(), claimedAtMs: T0.getTime() });
      // The payload comes back as JSON text, to be forwarded without parsing.
      expect(JSON.parse(claimed[0]!.payloadJson)).toEqual({ invoice: 7, tags: ['x'] });
      expect(claimed[1]!.payloadJson).toBe('{}');
      const row = await jobRow(db.pool, early);
      expect(row).toMatchObject({ state: 'CLAIMED', lease_owner: 'w1', attempt: 1 });
      expect((await runRows(db.pool, early))[0]).toMatchObject({ outcome: 'RUNNING', worker_id: 'w1', attempt: 1 });
      expect((await jobRow(db.pool, otherTask)).state).toBe('DUE');
      expect((await jobRow(db.pool, future)).state).toBe('DUE');
    });

    it('answers every field of a claimed job from its own column (rows come back as arrays)', async () => {
      const occurrence = at(T0, -7000);
      const id = await insertJob(db.pool, {
        task: 'a',
        occurrenceAt: occurrence,
        nextRunAt: at(T0, -2500),
        maxAttempts: 5,
        timeoutMs: 4321,
        payload: { k: 'v' },
      });
      const traceParent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
      await db.pool.query('UPDATE jobs SET trace_parent = $2, attempt = 1, lease_generation = 2 WHERE id = $1', [id, traceParent]);

      const [claimed] = await store.lease.claimDue({ ...CLAIM_SCOPE, owner: 'w1', tasks: ['a'], limit: 1, leaseMs: LEASE_MS, now: T0 });

      const { rows } = await db.pool.query('SELECT run_id FROM jobs WHERE id = $1', [id]);
      expect(claimed).toEqual({
        jobId: id,
        runId: Number(rows[0].run_id),
        namespace: 'default',
        task: 'a',
        payloadJson: '{"k": "v"}',
        attempt: 2,
        maxAttempts: 5,
        leaseGeneration: 3,
        leaseUntilMs: T0.getTime() + LEASE_MS,
        leaseRemainingMs: LEASE_MS,
        timeoutMs: 4321,
        scheduledForMs: occurrence.getTime(),
        dueAtMs: at(T0, -2500).getTime(),
        claimedAtMs: T0.getTime(),
        traceParent,
      });
    });

    it('claims nothing for zero slots or no tasks', async () => {
      await insertJob(db.pool, { nextRunAt: at(T0, -1) });
      expect(await store.lease.claimDue({ ...CLAIM_SCOPE, owner: 'w', tasks: ['noop'], limit: 0, leaseMs: LEASE_MS, now: T0 })).toEqual([]);
      expect(await store.lease.claimDue({ ...CLAIM_SCOPE, owner: 'w', tasks: [], limit: 5, leaseMs: LEASE_MS, now: T0 })).toEqual([]);
    });

    it('claims every row exactly once when claimers on separate connections race', async () => {
      const total = 3000;
      await insertDueJobs(db.pool, { count: total, nextRunAt: at(T0, -60_000), spreadMs: 59_000 });
      const claimers = Array.from({ length: 6 }, (_, i) => db.createStore({ maxConnections: 1 }));
      const claimedBy = new Map<string, string>();
      let duplicates = 0;
      await Promise.all(
        claimers.map(async (claimer, i) => {
          for (;;) {
            const batch = await claimer.lease.claimDue({
              ...CLAIM_SCOPE,
              owner: `w${i}`,
              tasks: ['noop'],
              limit: 37,
              leaseMs: LEASE_MS,
              now: T0,
            });
            if (batch.length === 0) return;
            for (const c of batch) {
              if (claimedBy.has(c.jobId)) duplicates++;
              claimedBy.set(c.jobId, `w${i}`);
            }
          }
        }),
      );
      expect(duplicates).toBe(0);
      expect(claimedBy.size).toBe(total);
      const { rows } = await db.pool.query(
        `SELECT count(*)::int AS runs, count(DISTINCT job_id)::int AS jobs,
                (SELECT count(*)::int FROM jobs WHERE state = 'CLAIMED' AND lease_generation = 1) AS claimed
         FROM runs`,
      );
      expect(rows[0]).toEqual({ runs: total, jobs: total, claimed: total });
      // Every claimer got some work: SKIP LOCKED spreads the spike rather than serialising it.
      expect(new Set(claimedBy.values()).size).toBeGreaterThan(1);
    });

    it('uses the partial index on next_run_at', async () => {
      await insertDueJobs(db.pool, { count: 20_000, nextRunAt: at(T0, 3_600_000), spreadMs: 86_400_000 });
      await insertDueJobs(db.pool, { count: 500, nextRunAt: at(T0, -1000) });
      await db.pool.query('ANALYZE jobs');
      const { rows } = await db.pool.query(
        `EXPLAIN SELECT id FROM jobs WHERE state = 'DUE' AND next_run_at <= $1 AND task = ANY($2::text[])
         ORDER BY next_run_at LIMIT 500 FOR UPDATE SKIP LOCKED`,
        [T0, ['noop']],
      );
      const plan = rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(plan).toContain('jobs_due_next_run_at_idx');
    });

    // Chaos finding 5: started_at was now(), the transaction start, which can precede the
    // snapshot that saw the job free (planning the claim takes a few hundred µs, time
    // enough for a completion to commit). An explicit transaction widens that gap at will.
    it("stamps started_at after the row lock, never before the finished_at of the run that freed the job", async () => {
      const id = await insertJob(db.pool, { task: 'a', nextRunAt: new Date(Date.now() - 1_000) });
      const [first] = await store.lease.claimDue({ ...CLAIM_SCOPE, owner: 'w1', tasks: ['a'], limit: 1, leaseMs: LEASE_MS });
      const claimer = await db.pool.connect();
      try {
        await claimer.query('BEGIN');
        await claimer.query('SELECT now()'); // fixes now() for the claim below
        await store.lease.release([{ ...heldBy('w1'), jobId: id, leaseGeneration: first!.leaseGeneration }], 'test');
        const { rows: claimed } = await claimer.query(CLAIM_SQL, [null, ['a'], 1, 'w2', LEASE_MS, 60_000, 'default', null, 0, false]);
        expect(claimed).toHaveLength(1);
        await claimer.query('COMMIT');
      } finally {
        claimer.release();
      }
      const { rows } = await db.pool.query(
        `SELECT r2.started_at >= r1.finished_at AS ordered
         FROM runs r1 JOIN runs r2 ON r2.job_id = r1.job_id AND r2.lease_generation = r1.lease_generation + 1
         WHERE r1.job_id = $1`,
        [id],
      );
      expect(rows).toEqual([{ ordered: true }]);
    });
  });

  describe('renew', () => {
    it('renews current leases and reports stale, expired-and-reaped and unknown ones as lost, changing nothing', async () => {
      const held = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 4, leaseUntil: at(T0, 1000) });
      const moved = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 5, leaseUntil: at(T0, 1000) });
      const reaped = await insertJob(db.pool, { state: 'DUE', leaseGeneration: 2, nextRunAt: at(T0, -1) });
      const before = await jobRow(db.pool, moved);

      const results = await store.lease.renew(
        [
          { ...FIXTURE_HOLDER, jobId: held, leaseGeneration: 4 },
          { ...FIXTURE_HOLDER, jobId: moved, leaseGeneration: 4 },
          { ...FIXTURE_HOLDER, jobId: reaped, leaseGeneration: 2 },
          { ...FIXTURE_HOLDER, jobId: '00000000-0000-7000-8000-000000000000', leaseGeneration: 1 },
          { ...FIXTURE_HOLDER, jobId: 'not-a-uuid', leaseGeneration: 1 },
        ],
        LEASE_MS,
        T0,
      );

      expect(results).toEqual([
        { kind: 'renewed', jobId: held, leaseGeneration: 4, remainingMs: LEASE_MS, abortRequested: false },
        { kind: 'lost', jobId: moved, leaseGeneration: 4, reason: 'stale-generation' },
        { kind: 'lost', jobId: reaped, leaseGeneration: 2, reason: 'expired' },
        { kind: 'lost', jobId: '00000000-0000-7000-8000-000000000000', leaseGeneration: 1, reason: 'not-found' },
        { kind: 'lost', jobId: 'not-a-uuid', leaseGeneration: 1, reason: 'not-found' },
      ]);
      expect((await jobRow(db.pool, held)).lease_until.getTime()).toBe(T0.getTime() + LEASE_MS);
      expect(await jobRow(db.pool, moved)).toEqual(before);
    });

    it('answers renewed only to the holder when one batch names the same lease for its holder and for a stranger', async () => {
      const fresh = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 1, leaseUntil: at(T0, LEASE_MS) });
      const older = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 1, leaseUntil: at(T0, 1000) });
      const named = [fresh, older].flatMap((jobId) => [
        { ...FIXTURE_HOLDER, jobId, leaseGeneration: 1 },
        { ...heldBy('stranger'), jobId, leaseGeneration: 1 },
      ]);
      expect((await store.lease.renew(named, LEASE_MS, T0)).map((r) => (r.kind === 'lost' ? r.reason : r.kind))).toEqual([
        'renewed',
        'not-owner',
        'renewed',
        'not-owner',
      ]);
    });

    it('answers a lease with more than five sixths of its length left without writing its row; older ones and aborted ones are extended', async () => {
      const sixth = Math.round(LEASE_MS / 6);
      const fresh = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 1, leaseUntil: at(T0, LEASE_MS - sixth + 50) });
      const older = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 1, leaseUntil: at(T0, LEASE_MS - sixth - 50) });
      const aborted = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 1, leaseUntil: at(T0, LEASE_MS - 100) });
      await db.pool.query(`UPDATE jobs SET abort_requested_at = $2, abort_requested_by = 'test' WHERE id = $1`, [aborted, at(T0, -1)]);
      const version = async (id: string) => (await db.pool.query('SELECT xmin::text AS v, lease_until, updated_at FROM jobs WHERE id = $1', [id])).rows[0];
      const [freshBefore, abortedBefore] = [await version(fresh), await version(aborted)];

      const results = await store.lease.renew(
        [fresh, older, aborted].map((jobId) => ({ ...FIXTURE_HOLDER, jobId, leaseGeneration: 1 })),
        LEASE_MS,
        T0,
      );
      expect(results).toEqual([
        { kind: 'renewed', jobId: fresh, leaseGeneration: 1, remainingMs: LEASE_MS - sixth + 50, abortRequested: false },
        { kind: 'renewed', jobId: older, leaseGeneration: 1, remainingMs: LEASE_MS, abortRequested: false },
        { kind: 'renewed', jobId: aborted, leaseGeneration: 1, remainingMs: LEASE_MS, abortRequested: true },
      ]);
      // The fresh one: the same row version, not merely the same values.
      expect(await version(fresh)).toEqual(freshBefore);
      expect((await jobRow(db.pool, older)).lease_until.getTime()).toBe(T0.getTime() + LEASE_MS);
      expect((await version(aborted)).v).not.toBe(abortedBefore.v);
    });
  });

  describe('holders', () => {
    it('refuses renew, complete and release named by another agent or token, changing nothing', async () => {
      const token = '0190a000-0000-7000-8000-00000000000a';
      const id = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 3, leaseOwner: 'owner', leaseUntil: at(T0, 1000) });
      await db.pool.query('UPDATE jobs SET lease_token = $2 WHERE id = $1', [id, token]);
      const before = await jobRow(db.pool, id);
      const strangers = [heldBy('other', token), heldBy('owner', null), heldBy('owner', '0190a000-0000-7000-8000-00000000000b')];
      for (const holder of strangers) {
        const lease = { ...holder, jobId: id, leaseGeneration: 3 };
        expect(await store.lease.renew([lease], LEASE_MS, T0)).toEqual([{ kind: 'lost', jobId: id, leaseGeneration: 3, reason: 'not-owner' }]);
        expect(await store.lease.complete([{ ...lease, outcome: 'SUCCEEDED' }], T0)).toEqual([{ kind: 'not-owner', jobId: id, leaseGeneration: 3 }]);
        expect(await store.lease.complete([{ ...lease, outcome: 'FAILED', error: 'x' }], T0)).toEqual([{ kind: 'not-owner', jobId: id, leaseGeneration: 3 }]);
        expect(await store.lease.release([lease], 'rogue', T0)).toEqual([{ kind: 'not-owner', jobId: id, leaseGeneration: 3 }]);
      }
      expect(await jobRow(db.pool, id)).toEqual(before);
      expect(await runRows(db.pool, id)).toMatchObject([{ outcome: 'RUNNING' }]);
      const [renewed] = await store.lease.renew([{ ...heldBy('owner', token), jobId: id, leaseGeneration: 3 }], LEASE_MS, T0);
      expect(renewed!.kind).toBe('renewed');
    });

    it("records the holder's report when one flush names its lease for another agent first", async () => {
      // A group commit merges several agents' reports; a stranger naming the same lease must neither hide the
      // holder's report (which would leave the run to expire and run again) nor be told it was recorded.
      for (const outcome of ['SUCCEEDED', 'FAILED'] as const) {
        const id = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 2, leaseOwner: 'owner', leaseUntil: at(T0, 1000), maxAttempts: 1 });
        const lease = { jobId: id, leaseGeneration: 2, outcome, error: outcome === 'FAILED' ? 'boom' : null };
        const results = await store.lease.complete([{ ...lease, ...heldBy('stranger') }, { ...lease, ...heldBy('owner') }], T0);
        // The stranger is answered after the holder's report settled the lease: it is not held any more.
        expect(results.map((r) => r.kind)).toEqual(['stale', 'recorded']);
        expect(await runRows(db.pool, id)).toMatchObject([{ outcome, worker_id: 'owner' }]);
        expect((await jobRow(db.pool, id)).state).toBe(outcome === 'SUCCEEDED' ? 'COMPLETED' : 'DEAD');
      }
    });

    it('answers a generation beyond bigint on its own; the rest of the batch is renewed', async () => {
      const id = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 1, leaseUntil: at(T0, 1000) });
      const results = await store.lease.renew(
        [
          { ...FIXTURE_HOLDER, jobId: id, leaseGeneration: Number(2n ** 63n) },
          { ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 1 },
          { ...FIXTURE_HOLDER, jobId: id, leaseGeneration: -1 },
        ],
        LEASE_MS,
        T0,
      );
      expect(results.map((r) => r.kind)).toEqual(['lost', 'renewed', 'lost']);
      const outcomes = await store.lease.complete(
        [
          { ...FIXTURE_HOLDER, jobId: id, leaseGeneration: Number(2n ** 64n), outcome: 'SUCCEEDED' },
          { ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 1, outcome: 'SUCCEEDED' },
        ],
        T0,
      );
      expect(outcomes.map((r) => r.kind)).toEqual(['stale', 'recorded']);
    });
  });

  describe('complete', () => {
    it('rejects a stale generation and changes nothing', async () => {
      const id = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 7 });
      const jobBefore = await jobRow(db.pool, id);
      const runsBefore = await runRows(db.pool, id);

      const [result] = await store.lease.complete([{ ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 6, outcome: 'SUCCEEDED' }], T0);

      expect(result).toEqual({ kind: 'stale', jobId: id, leaseGeneration: 6 });
      expect(await jobRow(db.pool, id)).toEqual(jobBefore);
      expect(await runRows(db.pool, id)).toEqual(runsBefore);
    });

    it('records a one-off success once; a repeated report is stale', async () => {
      const id = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 1 });
      const results = await store.lease.complete(
        [
          { ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 1, outcome: 'SUCCEEDED' },
          { ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 1, outcome: 'FAILED', error: 'duplicate' },
        ],
        T0,
      );
      expect(results.map((r) => r.kind)).toEqual(['recorded', 'stale']);
      expect(await jobRow(db.pool, id)).toMatchObject({ state: 'COMPLETED', next_run_at: null, lease_owner: null, lease_until: null });
      expect(await runRows(db.pool, id)).toMatchObject([{ outcome: 'SUCCEEDED', finished_at: T0, error: null }]);
      const [again] = await store.lease.complete([{ ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 1, outcome: 'SUCCEEDED' }], T0);
      expect(again!.kind).toBe('stale');
    });

    it('answers each report of a batch of successes on its own: one-off, recurring, stale, another holder, a second spelling', async () => {
      const oneOff = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 1 });
      const occurrence = at(T0, -5000);
      const recurring = await insertJob(db.pool, { state: 'CLAIMED', schedule: '* * * * *', occurrenceAt: occurrence, leaseGeneration: 1 });
      const moved = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 3 });
      const foreign = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 1, leaseOwner: 'someone-else' });
      const spelled = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 1 });
      const foreignBefore = await jobRow(db.pool, foreign);
      const succeeded = { ...FIXTURE_HOLDER, outcome: 'SUCCEEDED' as const };

      // Every report well formed and distinct: the one-statement path, which then settles the rest.
      const results = await store.lease.complete(
        [oneOff, recurring, foreign].map((jobId) => ({ ...succeeded, jobId, leaseGeneration: 1 })).concat({ ...succeeded, jobId: moved, leaseGeneration: 2 }),
        T0,
      );
      expect(results.map((r) => [r.jobId, r.kind])).toEqual([
        [oneOff, 'recorded'],
        [recurring, 'recorded'],
        [foreign, 'not-owner'],
        [moved, 'stale'],
      ]);
      expect(results[0]).toMatchObject({ state: 'COMPLETED', runOutcome: 'SUCCEEDED', nextRunAt: null, skipped: 0 });
      expect(results[1]).toMatchObject({ state: 'DUE', runOutcome: 'SUCCEEDED' });
      expect(await jobRow(db.pool, oneOff)).toMatchObject({ state: 'COMPLETED' });
      expect(await jobRow(db.pool, recurring)).toMatchObject({ state: 'DUE', lease_owner: null });
      expect(await jobRow(db.pool, foreign)).toEqual(foreignBefore);
      expect((await jobRow(db.pool, moved)).state).toBe('CLAIMED');
      expect(await runRows(db.pool, foreign)).toMatchObject([{ outcome: 'RUNNING' }]);

      // The same lease twice, once in capitals: recorded once, the second report stale.
      const twice = await store.lease.complete(
        [{ ...succeeded, jobId: spelled, leaseGeneration: 1 }, { ...succeeded, jobId: spelled.toUpperCase(), leaseGeneration: 1 }],
        T0,
      );
      expect(twice.map((r) => r.kind)).toEqual(['recorded', 'stale']);
      expect(await runRows(db.pool, spelled)).toMatchObject([{ outcome: 'SUCCEEDED' }]);
    });

    it('retries a failure with exponential backoff for the same occurrence, then goes DEAD at the cap', async () => {
      const occurrence = at(T0, -5000);
      const id = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 1, attempt: 1, maxAttempts: 3, occurrenceAt: occurrence });

      await store.lease.complete([{ ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 1, outcome: 'FAILED', error: 'boom' }], T0);
      expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DUE', attempt: 1, next_run_at: at(T0, 1000), occurrence_at: occurrence });

      const [second] = await store.lease.claimDue({ ...CLAIM_SCOPE, owner: 'w', tasks: ['noop'], limit: 1, leaseMs: LEASE_MS, now: at(T0, 1000) });
      expect(second).toMatchObject({ attempt: 2, leaseGeneration: 2, scheduledForMs: occurrence.getTime(), dueAtMs: at(T0, 1000).getTime() });
      await store.lease.complete([{ ...heldBy('w'), jobId: id, leaseGeneration: 2, outcome: 'TIMED_OUT', error: 'timeout' }], at(T0, 2000));
      expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DUE', attempt: 2, next_run_at: at(T0, 2000 + 2000) });

      await store.lease.claimDue({ ...CLAIM_SCOPE, owner: 'w', tasks: ['noop'], limit: 1, leaseMs: LEASE_MS, now: at(T0, 4000) });
      await store.lease.complete([{ ...heldBy('w'), jobId: id, leaseGeneration: 3, outcome: 'FAILED', error: 'boom' }], at(T0, 5000));
      expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DEAD', attempt: 3, next_run_at: null });
      expect((await runRows(db.pool, id)).map((r) => [r.attempt, r.outcome])).toEqual([
        [1, 'FAILED'],
        [2, 'TIMED_OUT'],
        [3, 'FAILED'],
      ]);
    });

    it('schedules a recurring job from the occurrence served, not from the late finish', async () => {
      const occurrence = new Date('2030-01-01T10:00:00.000Z');
      const id = await insertJob(db.pool, {
        state: 'CLAIMED',
        schedule: '*/5 * * * *',
        occurrenceAt: occurrence,
        leaseGeneration: 1,
      });
      // Finished 3 min 17 s late: the next occurrence is still 10:05:00 exactly.
      await store.lease.complete([{ ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 1, outcome: 'SUCCEEDED' }], at(occurrence, 197_000));
      expect(await jobRow(db.pool, id)).toMatchObject({
        state: 'DUE',
        attempt: 0,
        occurrence_at: new Date('2030-01-01T10:05:00.000Z'),
        next_run_at: new Date('2030-01-01T10:05:00.000Z'),
      });
    });

    it('a run longer than its interval: what came due meanwhile follows the overlap policy (skip by default, buffer-one)', async () => {
      const occurrence = new Date('2030-01-01T10:00:00.000Z');
      const fixture = { state: 'CLAIMED', schedule: '* * * * *', occurrenceAt: occurrence, leaseGeneration: 1 } as const;
      const skipping = await insertJob(db.pool, fixture);
      const buffering = await insertJob(db.pool, fixture);
      await db.pool.query("UPDATE jobs SET overlap_policy = 'buffer-one' WHERE id = $1", [buffering]);
      await db.pool.query("UPDATE jobs SET run_started_at = $1 WHERE state = 'CLAIMED'", [occurrence]);
      // Ran 3.5 minutes: 10:01, 10:02 and 10:03 came due meanwhile.
      await store.lease.complete(
        [skipping, buffering].map((jobId) => ({ ...FIXTURE_HOLDER, jobId, leaseGeneration: 1, outcome: 'SUCCEEDED' as const })),
        at(occurrence, 210_000),
      );
      expect(await jobRow(db.pool, skipping)).toMatchObject({ state: 'DUE', occurrence_at: new Date('2030-01-01T10:04:00.000Z'), next_reason: null });
      const skipped = await runRows(db.pool, skipping);
      expect(skipped.map((r) => [r.outcome, r.scheduled_for.toISOString(), r.reason])).toEqual([
        ['SUCCEEDED', '2030-01-01T10:00:00.000Z', null],
        ['SKIPPED', '2030-01-01T10:01:00.000Z', 'overlap:skip'],
        ['SKIPPED', '2030-01-01T10:02:00.000Z', 'overlap:skip'],
        ['SKIPPED', '2030-01-01T10:03:00.000Z', 'overlap:skip'],
      ]);
      expect(skipped[1].error).toContain('overlap policy skip');
      // buffer-one: the first that came due runs at once (late), the others are skipped.
      // Due at once: a run planned late is due from the settlement, never "late" by the skip threshold.
      expect(await jobRow(db.pool, buffering)).toMatchObject({
        state: 'DUE',
        occurrence_at: new Date('2030-01-01T10:01:00.000Z'),
        next_run_at: at(occurrence, 210_000),
        next_reason: 'overlap:buffer-one',
      });
      expect((await runRows(db.pool, buffering)).map((r) => [r.outcome, r.scheduled_for.toISOString(), r.reason])).toEqual([
        ['SUCCEEDED', '2030-01-01T10:00:00.000Z', null],
        ['SKIPPED', '2030-01-01T10:02:00.000Z', 'overlap:buffer-one'],
        ['SKIPPED', '2030-01-01T10:03:00.000Z', 'overlap:buffer-one'],
      ]);
    });

    it('a run claimed late (fire-once): the latest occurrence missed before it started runs once more, late', async () => {
      const occurrence = new Date('2030-01-01T10:00:00.000Z');
      const id = await insertJob(db.pool, { state: 'CLAIMED', schedule: '* * * * *', occurrenceAt: occurrence, leaseGeneration: 1 });
      // Claimed at 10:02:30 (an outage), finished at 10:02:40: 10:01 and 10:02 were missed before it started.
      await db.pool.query('UPDATE jobs SET run_started_at = $1 WHERE id = $2', [at(occurrence, 150_000), id]);
      await store.lease.complete([{ ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 1, outcome: 'SUCCEEDED' }], at(occurrence, 160_000));
      expect(await jobRow(db.pool, id)).toMatchObject({ occurrence_at: new Date('2030-01-01T10:02:00.000Z'), next_reason: 'misfire:fire-once' });
      const runs = await runRows(db.pool, id);
      expect(runs.map((r) => [r.outcome, r.scheduled_for.toISOString(), r.reason])).toEqual([
        ['SUCCEEDED', '2030-01-01T10:00:00.000Z', null],
        ['SKIPPED', '2030-01-01T10:01:00.000Z', 'misfire:fire-once'],
      ]);
      expect(runs[1].error).toContain('fire-once');
    });

    it('skip policy: resumes at the next future occurrence and records every missed one', async () => {
      const occurrence = new Date('2030-01-01T10:00:00.000Z');
      const id = await insertJob(db.pool, {
        state: 'CLAIMED',
        schedule: '* * * * *',
        occurrenceAt: occurrence,
        leaseGeneration: 1,
        misfirePolicy: 'skip',
      });
      await store.lease.complete([{ ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 1, outcome: 'SUCCEEDED' }], at(occurrence, 210_000));
      expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DUE', next_run_at: new Date('2030-01-01T10:04:00.000Z') });
      const skipped = (await runRows(db.pool, id)).filter((r) => r.outcome === 'SKIPPED').map((r) => r.scheduled_for.toISOString());
      expect(skipped).toEqual(['2030-01-01T10:01:00.000Z', '2030-01-01T10:02:00.000Z', '2030-01-01T10:03:00.000Z']);
    });

    it('bounds the SKIPPED rows after a long outage and states the full count', async () => {
      const occurrence = new Date('2030-01-01T00:00:00.000Z');
      const id = await insertJob(db.pool, {
        state: 'CLAIMED',
        schedule: '* * * * * *',
        occurrenceAt: occurrence,
        leaseGeneration: 1,
        misfirePolicy: 'skip',
      });
      await store.lease.complete([{ ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 1, outcome: 'SUCCEEDED' }], at(occurrence, 3_600_000));
      const skipped = (await runRows(db.pool, id)).filter((r) => r.outcome === 'SKIPPED');
      expect(skipped).toHaveLength(100);
      expect(skipped[99].error).toContain('3500 later missed occurrences not listed');
    });

    it('moves a recurring job on to its next occurrence when the attempts for one run out', async () => {
      const occurrence = new Date('2030-01-01T10:00:00.000Z');
      const id = await insertJob(db.pool, {
        state: 'CLAIMED',
        schedule: '0 * * * *',
        occurrenceAt: occurrence,
        leaseGeneration: 2,
        attempt: 2,
        maxAttempts: 2,
      });
      await store.lease.complete([{ ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 2, outcome: 'FAILED', error: 'x' }], at(occurrence, 1000));
      expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DUE', attempt: 0, next_run_at: new Date('2030-01-01T11:00:00.000Z') });
    });
  });

  describe('reapExpired', () => {
    it('returns an expired lease to DUE with the attempt counted and its run LEASE_EXPIRED', async () => {
      const id = await insertJob(db.pool, {
        state: 'CLAIMED',
        leaseGeneration: 3,
        attempt: 1,
        maxAttempts: 3,
        leaseUntil: at(T0, -5000),
      });
      const alive = await insertJob(db.pool, { state: 'CLAIMED', leaseUntil: at(T0, 5000) });

      const result = await store.lease.reapExpired({ now: T0 });

      expect(result.expired).toEqual([{ jobId: id, leaseGeneration: 3, leaseOwner: 'agent-fixture', state: 'DUE' }]);
      expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DUE', attempt: 1, next_run_at: T0, lease_owner: null, lease_generation: '3' });
      expect(await runRows(db.pool, id)).toMatchObject([{ outcome: 'LEASE_EXPIRED', finished_at: T0 }]);
      expect((await jobRow(db.pool, alive)).state).toBe('CLAIMED');
      // The next claim bumps the generation, so the lost holder's reports are stale.
      const [next] = await store.lease.claimDue({ ...CLAIM_SCOPE, owner: 'w2', tasks: ['noop'], limit: 1, leaseMs: LEASE_MS, now: T0 });
      expect(next).toMatchObject({ jobId: id, leaseGeneration: 4, attempt: 2 });
      const [late] = await store.lease.complete([{ ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 3, outcome: 'SUCCEEDED' }], T0);
      expect(late!.kind).toBe('stale');
    });

    it('sends a one-off job DEAD when the expired attempt was its last', async () => {
      const id = await insertJob(db.pool, {
        state: 'CLAIMED',
        attempt: 3,
        maxAttempts: 3,
        leaseGeneration: 3,
        leaseUntil: at(T0, -1),
      });
      const result = await store.lease.reapExpired({ now: T0 });
      expect(result.expired[0]!.state).toBe('DEAD');
      expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DEAD', next_run_at: null });
    });
  });

  describe('misfire policy skip', () => {
    it('never claims a skip job later than the threshold; skipMisfired moves it on and records what it missed', async () => {
      const occurrence = new Date('2030-01-01T09:00:00.000Z');
      const now = new Date('2030-01-01T09:03:30.000Z');
      const late = await insertJob(db.pool, { schedule: '* * * * *', occurrenceAt: occurrence, nextRunAt: occurrence, misfirePolicy: 'skip' });
      const lateFireOnce = await insertJob(db.pool, { schedule: '* * * * *', occurrenceAt: occurrence, nextRunAt: occurrence });
      const slightlyLate = await insertJob(db.pool, {
        schedule: '* * * * *',
        occurrenceAt: at(now, -30_000),
        nextRunAt: at(now, -30_000),
        misfirePolicy: 'skip',
      });

      const claimed = await store.lease.claimDue({ ...CLAIM_SCOPE, owner: 'w', tasks: ['noop'], limit: 10, leaseMs: LEASE_MS, misfireThresholdMs: 60_000, now });
      expect(claimed.map((c) => c.jobId).sort()).toEqual([lateFireOnce, slightlyLate].sort());

      expect(await store.lease.skipMisfired({ thresholdMs: 60_000, now })).toEqual({ skipped: 1, occurrences: 4 });
      expect(await jobRow(db.pool, late)).toMatchObject({ state: 'DUE', attempt: 0, next_run_at: new Date('2030-01-01T09:04:00.000Z') });
      const skipped = (await runRows(db.pool, late)).map((r) => [r.outcome, r.scheduled_for.toISOString()]);
      expect(skipped).toEqual([
        ['SKIPPED', '2030-01-01T09:00:00.000Z'],
        ['SKIPPED', '2030-01-01T09:01:00.000Z'],
        ['SKIPPED', '2030-01-01T09:02:00.000Z'],
        ['SKIPPED', '2030-01-01T09:03:00.000Z'],
      ]);
      expect(await store.lease.skipMisfired({ thresholdMs: 60_000, now })).toEqual({ skipped: 0, occurrences: 0 });
    });
  });

  describe('release', () => {
    it('gives back an unstarted lease without spending an attempt; stale releases change nothing', async () => {
      const id = await insertJob(db.pool, { state: 'CLAIMED', attempt: 1, leaseGeneration: 1, nextRunAt: at(T0, -10) });
      const results = await store.lease.release(
        [
          { ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 0 },
          { ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 1 },
        ],
        'agent draining',
        T0,
      );
      expect(results.map((r) => r.kind)).toEqual(['stale', 'released']);
      expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DUE', attempt: 0, lease_owner: null, next_run_at: at(T0, -10) });
      expect(await runRows(db.pool, id)).toMatchObject([{ outcome: 'CANCELLED', error: 'released before start: agent draining' }]);
      const [again] = await store.lease.claimDue({ ...CLAIM_SCOPE, owner: 'w', tasks: ['noop'], limit: 1, leaseMs: LEASE_MS, now: T0 });
      expect(again).toMatchObject({ attempt: 1, leaseGeneration: 2 });
    });

    it("records each lease's own reason in its run, and the call's for a lease that gives none", async () => {
      const queued = await insertJob(db.pool, { state: 'CLAIMED', attempt: 1, leaseGeneration: 1, nextRunAt: at(T0, -10) });
      const withdrawn = await insertJob(db.pool, { state: 'CLAIMED', attempt: 1, leaseGeneration: 4, nextRunAt: at(T0, -10) });
      const plain = await insertJob(db.pool, { state: 'CLAIMED', attempt: 1, leaseGeneration: 2, nextRunAt: at(T0, -10) });
      const results = await store.lease.release(
        [
          { ...FIXTURE_HOLDER, jobId: queued, leaseGeneration: 1, reason: 'no free slot' },
          { ...FIXTURE_HOLDER, jobId: withdrawn, leaseGeneration: 4, reason: 'withdrawn before its start' },
          { ...FIXTURE_HOLDER, jobId: plain, leaseGeneration: 2 },
        ],
        'agent gave the lease back',
        T0,
      );
      expect(results.map((r) => r.kind)).toEqual(['released', 'released', 'released']);
      expect((await runRows(db.pool, queued)).map((run) => run.error)).toEqual(['released before start: no free slot']);
      expect((await runRows(db.pool, withdrawn)).map((run) => run.error)).toEqual(['released before start: withdrawn before its start']);
      expect((await runRows(db.pool, plain)).map((run) => run.error)).toEqual(['released before start: agent gave the lease back']);
    });

    it('releases a lease named twice once, and tells only its holder it was released', async () => {
      const twice = await insertJob(db.pool, { state: 'CLAIMED', attempt: 1, leaseGeneration: 1, nextRunAt: at(T0, -10) });
      const shared = await insertJob(db.pool, { state: 'CLAIMED', attempt: 1, leaseGeneration: 3, nextRunAt: at(T0, -10) });
      const lease = { ...FIXTURE_HOLDER, jobId: twice, leaseGeneration: 1 };
      // One flush can merge several agents' releases: another agent names `shared` before its holder does.
      const results = await store.lease.release(
        [lease, { ...FIXTURE_HOLDER, owner: 'other-agent', jobId: shared, leaseGeneration: 3 }, { ...lease, reason: 'again' }, { ...FIXTURE_HOLDER, jobId: shared, leaseGeneration: 3 }],
        'agent draining',
        T0,
      );
      // The other agent is not told its naming released anything: by the time it is answered the lease is not held.
      expect(results.map((r) => r.kind)).toEqual(['released', 'stale', 'released', 'released']);
      // The first naming's reason; one run each.
      expect((await runRows(db.pool, twice)).map((run) => run.error)).toEqual(['released before start: agent draining']);
      expect(await runRows(db.pool, shared)).toHaveLength(1);
      expect(await jobRow(db.pool, twice)).toMatchObject({ state: 'DUE', attempt: 0 });
    });
  });

  describe('cancel', () => {
    it('answers each state', async () => {
      const due = await insertJob(db.pool, { nextRunAt: at(T0, 60_000) });
      const claimed = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 2, leaseOwner: 'w9' });
      const done = await insertJob(db.pool, { state: 'COMPLETED' });
      const other = await insertJob(db.pool, { namespace: 'other' });

      expect(await store.lease.cancel('default', due, T0)).toEqual({ kind: 'cancelled' });
      expect(await store.lease.cancel('default', due, T0)).toEqual({ kind: 'already-cancelled' });
      expect(await store.lease.cancel('default', claimed, T0)).toMatchObject({
        kind: 'claimed',
        leaseGeneration: 2,
        leaseOwner: 'w9',
      });
      expect(await store.lease.cancel('default', done, T0)).toEqual({ kind: 'finished', state: 'COMPLETED' });
      expect(await store.lease.cancel('default', other, T0)).toEqual({ kind: 'not-found' });
      expect(await store.lease.cancel('default', 'nope', T0)).toEqual({ kind: 'not-found' });
      expect((await jobRow(db.pool, due)).state).toBe('CANCELLED');
      expect((await jobRow(db.pool, claimed)).state).toBe('CLAIMED');
    });

    it('has exactly one winner when it races a claim, every time', async () => {
      const claimer = db.createStore({ maxConnections: 1 });
      const canceller = db.createStore({ maxConnections: 1 });
      const trials = 300;
      let cancels = 0;
      let claims = 0;
      for (let i = 0; i < trials; i++) {
        const id = await insertJob(db.pool, { nextRunAt: at(T0, -1) });
        const [claimed, cancelled] = await Promise.all([
          claimer.lease.claimDue({ ...CLAIM_SCOPE, owner: 'w', tasks: ['noop'], limit: 1, leaseMs: LEASE_MS, now: T0 }),
          canceller.lease.cancel('default', id, T0),
        ]);
        const wonClaim = claimed.length === 1;
        if (wonClaim) {
          claims++;
          expect(cancelled.kind).toBe('claimed');
          expect((await jobRow(db.pool, id)).state).toBe('CLAIMED');
        } else {
          cancels++;
          expect(cancelled.kind).toBe('cancelled');
          expect((await jobRow(db.pool, id)).state).toBe('CANCELLED');
          expect(await runRows(db.pool, id)).toEqual([]);
        }
        await db.pool.query("UPDATE jobs SET state = 'COMPLETED', next_run_at = NULL WHERE id = $1", [id]);
      }
      expect(cancels + claims).toBe(trials);
    });
  });

  describe('pause, resume, trigger', () => {
    it('pauses and resumes a due job; a claimed one conflicts', async () => {
      const id = await insertJob(db.pool, { nextRunAt: at(T0, -1) });
      expect(await store.lease.pause('default', id, T0)).toEqual({ kind: 'done', jobId: id });
      expect(await store.lease.claimDue({ ...CLAIM_SCOPE, owner: 'w', tasks: ['noop'], limit: 5, leaseMs: LEASE_MS, now: T0 })).toEqual([]);
      expect(await store.lease.resume('default', id, T0)).toEqual({ kind: 'done', jobId: id });
      expect(await store.lease.claimDue({ ...CLAIM_SCOPE, owner: 'w', tasks: ['noop'], limit: 5, leaseMs: LEASE_MS, now: T0 })).toHaveLength(1);
      expect(await store.lease.pause('default', id, T0)).toEqual({ kind: 'conflict', state: 'CLAIMED' });
      expect(await store.lease.resume('default', 'x', T0)).toEqual({ kind: 'not-found' });
    });

    it('trigger runs a recurring job now and the schedule carries on unchanged', async () => {
      const nextOccurrence = new Date('2030-01-01T12:00:00.000Z');
      const id = await insertJob(db.pool, { schedule: '0 12 * * *', nextRunAt: nextOccurrence, occurrenceAt: nextOccurrence });
      const now = new Date('2030-01-01T09:30:00.000Z');
      expect(await store.lease.trigger('default', id, now)).toEqual({ kind: 'done', jobId: id });
      const [run] = await store.lease.claimDue({ ...CLAIM_SCOPE, owner: 'w', tasks: ['noop'], limit: 1, leaseMs: LEASE_MS, now });
      expect(run!.scheduledForMs).toBe(now.getTime());
      await store.lease.complete([{ ...heldBy('w'), jobId: id, leaseGeneration: run!.leaseGeneration, outcome: 'SUCCEEDED' }], at(now, 1000));
      expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DUE', next_run_at: nextOccurrence });
    });

    it('trigger revives a DEAD job with a fresh attempt budget', async () => {
      const id = await insertJob(db.pool, { state: 'DEAD', attempt: 3, maxAttempts: 3, nextRunAt: null });
      expect(await store.lease.trigger('default', id, T0)).toEqual({ kind: 'done', jobId: id });
      expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DUE', attempt: 0, next_run_at: T0 });
      expect(await store.lease.trigger('default', (await insertJob(db.pool, { state: 'CANCELLED', nextRunAt: null })), T0)).toEqual({
        kind: 'conflict',
        state: 'CANCELLED',
      });
    });
  });
});
