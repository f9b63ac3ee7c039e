/**
 * Aborting a running run at the store: the request, what renewals answer, and
 * how every way a lease can end (a report, a release, an expiry) settles an
 * aborted run. Time is pinned (`now`), so lease arithmetic is exact.
 */
import { Client } from 'pg';
import { createTestDatabase, insertJob, at, jobRow, runRows, FIXTURE_HOLDER, type TestDatabase } from '@kairos/testing';
import { ABORT_CHANNEL } from './notifications';
import type { Store } from './store';

const T0 = new Date('2030-01-01T00:00:00.000Z');
const LEASE_MS = 10_000;
const GRACE_MS = 30_000;
const BY = 'ops (token 0190a000-0000-7000-8000-0000000000aa)';

describe('aborting a running run', () => {
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

  const claimedOneOff = () => insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 2, leaseUntil: at(T0, LEASE_MS), runAt: at(T0, -1000) });
  const claimedRecurring = () =>
    insertJob(db.pool, {
      state: 'CLAIMED',
      schedule: '*/5 * * * *',
      occurrenceAt: T0,
      leaseGeneration: 2,
      leaseUntil: at(T0, LEASE_MS),
    });
  const lease = (jobId: string) => ({ ...FIXTURE_HOLDER, jobId, leaseGeneration: 2 });

  it('records the request on the CLAIMED job, answers its run and holder, and is idempotent', async () => {
    const id = await claimedOneOff();
    const [run] = await runRows(db.pool, id);
    const first = await store.lease.abort('default', id, { by: BY, stopSchedule: false }, T0);
    expect(first).toEqual({
      kind: 'requested',
      runId: Number(run.id),
      leaseGeneration: 2,
      leaseOwner: 'agent-fixture',
      requestedBy: BY,
      requestedAt: T0,
      stopSchedule: false,
    });
    // Asked again by someone else, later, with stopSchedule: the first caller and time stay, stopSchedule is added.
    const again = await store.lease.abort('default', id, { by: 'someone else', stopSchedule: true }, at(T0, 500));
    expect(again).toMatchObject({ kind: 'requested', requestedBy: BY, requestedAt: T0, stopSchedule: true });
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'CLAIMED', abort_requested_by: BY, abort_stop_schedule: true });
    // The lease itself is untouched: its holder keeps it until it reports.
    expect((await jobRow(db.pool, id)).lease_until).toEqual(at(T0, LEASE_MS));
  });

  it('answers not-running for a job nobody holds, and not-found across namespaces or for junk ids', async () => {
    const due = await insertJob(db.pool, { state: 'DUE', nextRunAt: T0 });
    const done = await insertJob(db.pool, { state: 'COMPLETED' });
    const claimed = await claimedOneOff();
    expect(await store.lease.abort('default', due, { by: BY, stopSchedule: false }, T0)).toEqual({ kind: 'not-running', state: 'DUE' });
    expect(await store.lease.abort('default', done, { by: BY, stopSchedule: false }, T0)).toEqual({ kind: 'not-running', state: 'COMPLETED' });
    expect(await store.lease.abort('other', claimed, { by: BY, stopSchedule: false }, T0)).toEqual({ kind: 'not-found' });
    expect(await store.lease.abort('default', 'nope', { by: BY, stopSchedule: false }, T0)).toEqual({ kind: 'not-found' });
    expect((await jobRow(db.pool, due)).abort_requested_at).toBeNull();
    expect((await jobRow(db.pool, claimed)).abort_requested_at).toBeNull();
  });

  it('notifies kairos_abort with the lease, once the request commits', async () => {
    const id = await claimedOneOff();
    const listener = new Client({ connectionString: db.url });
    await listener.connect();
    try {
      const heard = new Promise<string | undefined>((resolve) => listener.on('notification', (message) => resolve(message.payload)));
      await listener.query(`LISTEN ${ABORT_CHANNEL}`);
      await store.lease.abort('default', id, { by: BY, stopSchedule: false }, T0);
      expect(await heard).toBe(`${id}:2`);
    } finally {
      await listener.end();
    }
  });

  it('renewals say so, and extend an aborted lease no further than the abort grace', async () => {
    const id = await claimedOneOff();
    await store.lease.abort('default', id, { by: BY, stopSchedule: false }, T0);
    expect(await store.lease.renew([lease(id)], LEASE_MS, at(T0, 1000), GRACE_MS)).toEqual([
      { kind: 'renewed', jobId: id, leaseGeneration: 2, remainingMs: LEASE_MS, abortRequested: true },
    ]);
    // 25 s after the request only 5 s of grace are left; past it, nothing more.
    const [late] = await store.lease.renew([lease(id)], LEASE_MS, at(T0, 25_000), GRACE_MS);
    expect(late).toMatchObject({ kind: 'renewed', remainingMs: 5_000, abortRequested: true });
    const [over] = await store.lease.renew([lease(id)], LEASE_MS, at(T0, 31_000), GRACE_MS);
    expect(over).toMatchObject({ kind: 'renewed', remainingMs: 0, abortRequested: true });
    expect((await jobRow(db.pool, id)).lease_until).toEqual(at(T0, GRACE_MS));
  });

  it('a reported CANCELLED ends a one-off job CANCELLED, the run CANCELLED with who aborted it, never retried', async () => {
    const id = await claimedOneOff();
    await store.lease.abort('default', id, { by: BY, stopSchedule: false }, T0);
    const [result] = await store.lease.complete([{ ...lease(id), outcome: 'CANCELLED', error: 'aborted by an operator' }], at(T0, 100));
    expect(result).toMatchObject({ kind: 'recorded', state: 'CANCELLED', runOutcome: 'CANCELLED', nextRunAt: null });
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'CANCELLED', abort_requested_at: null, lease_owner: null, attempt: 1 });
    expect(await runRows(db.pool, id)).toEqual([
      expect.objectContaining({ outcome: 'CANCELLED', aborted_by: BY, error: `aborted by ${BY}: aborted by an operator` }),
    ]);
  });

  it('a failure reported after the abort counts as the abort, not as a failed attempt', async () => {
    const id = await claimedRecurring();
    await store.lease.abort('default', id, { by: BY, stopSchedule: false }, T0);
    const [result] = await store.lease.complete([{ ...lease(id), outcome: 'FAILED', error: 'killed by SIGTERM' }], at(T0, 100));
    // Recurring: on to the next occurrence with a fresh attempt budget, as after any finished occurrence.
    expect(result).toMatchObject({ kind: 'recorded', state: 'DUE', runOutcome: 'CANCELLED', nextRunAt: at(T0, 300_000) });
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DUE', attempt: 0, abort_requested_at: null });
    expect((await runRows(db.pool, id))[0]).toMatchObject({ outcome: 'CANCELLED', aborted_by: BY });
  });

  it('stopSchedule ends a recurring job CANCELLED, even when the run succeeded first', async () => {
    const aborted = await claimedRecurring();
    const succeeded = await claimedRecurring();
    for (const id of [aborted, succeeded]) await store.lease.abort('default', id, { by: BY, stopSchedule: true }, T0);
    const results = await store.lease.complete(
      [
        { ...lease(aborted), outcome: 'CANCELLED' },
        { ...lease(succeeded), outcome: 'SUCCEEDED' },
      ],
      at(T0, 100),
    );
    expect(results).toEqual([
      expect.objectContaining({ kind: 'recorded', state: 'CANCELLED', runOutcome: 'CANCELLED' }),
      expect.objectContaining({ kind: 'recorded', state: 'CANCELLED', runOutcome: 'SUCCEEDED' }),
    ]);
    expect((await runRows(db.pool, succeeded))[0]).toMatchObject({ outcome: 'SUCCEEDED', aborted_by: null, error: null });
    expect((await jobRow(db.pool, succeeded)).next_run_at).toBeNull();
  });

  it('a one-off run that succeeded before the abort reached it stays SUCCEEDED and the job COMPLETED', async () => {
    const id = await claimedOneOff();
    await store.lease.abort('default', id, { by: BY, stopSchedule: false }, T0);
    const [result] = await store.lease.complete([{ ...lease(id), outcome: 'SUCCEEDED' }], at(T0, 100));
    expect(result).toMatchObject({ kind: 'recorded', state: 'COMPLETED', runOutcome: 'SUCCEEDED' });
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'COMPLETED', abort_requested_at: null });
  });

  it('a lease given back unstarted after an abort is settled as aborted, not handed out again', async () => {
    const id = await claimedOneOff();
    const plain = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 2, leaseUntil: at(T0, LEASE_MS), nextRunAt: at(T0, -1000) });
    await store.lease.abort('default', id, { by: BY, stopSchedule: false }, T0);
    expect(await store.lease.release([lease(id), lease(plain)], 'agent is draining', at(T0, 100))).toEqual([
      { kind: 'released', jobId: id, leaseGeneration: 2 },
      { kind: 'released', jobId: plain, leaseGeneration: 2 },
    ]);
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'CANCELLED', abort_requested_at: null });
    expect((await runRows(db.pool, id))[0]).toMatchObject({ outcome: 'CANCELLED', aborted_by: BY });
    expect((await jobRow(db.pool, plain)).state).toBe('DUE');
  });

  it('an agent that never reports loses the lease to expiry: LEASE_EXPIRED, aborted_by set, no retry', async () => {
    const id = await claimedOneOff();
    await store.lease.abort('default', id, { by: BY, stopSchedule: false }, T0);
    const { expired } = await store.lease.reapExpired({ now: at(T0, LEASE_MS + 1) });
    expect(expired).toEqual([{ jobId: id, leaseGeneration: 2, leaseOwner: 'agent-fixture', state: 'CANCELLED' }]);
    expect((await runRows(db.pool, id))[0]).toMatchObject({
      outcome: 'LEASE_EXPIRED',
      aborted_by: BY,
      error: `aborted by ${BY}, but the agent never confirmed that the run stopped: the lease expired`,
    });
    // The late report of the agent is stale: one outcome per run.
    expect(await store.lease.complete([{ ...lease(id), outcome: 'CANCELLED' }], at(T0, LEASE_MS + 2))).toEqual([
      { kind: 'stale', jobId: id, leaseGeneration: 2 },
    ]);
  });

  it('races a completion: whichever locks the row first wins, and the run has exactly one outcome', async () => {
    for (let round = 0; round < 20; round++) {
      await db.truncate();
      const id = await claimedOneOff();
      const [abort, [completion]] = await Promise.all([
        store.lease.abort('default', id, { by: BY, stopSchedule: false }, T0),
        store.lease.complete([{ ...lease(id), outcome: 'SUCCEEDED' }], T0),
      ]);
      expect(completion).toMatchObject({ kind: 'recorded', state: 'COMPLETED', runOutcome: 'SUCCEEDED' });
      // The abort either came first (and changed nothing the success did not override) or found nothing running.
      expect(['requested', 'not-running']).toContain(abort.kind);
      expect(await jobRow(db.pool, id)).toMatchObject({ state: 'COMPLETED', abort_requested_at: null });
      expect((await runRows(db.pool, id)).map((r) => r.outcome)).toEqual(['SUCCEEDED']);
    }
  });
});
