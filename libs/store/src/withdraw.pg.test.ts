/**
 * Pre-dispatch at the store: claiming ahead of the due instant, and taking a
 * pre-dispatched lease back (withdraw.ts): the request, the holder's release
 * that holds the job for the requester, the holder's refusal, and the
 * retraction that races a late release. Time is pinned (`now`).
 */
import { Client } from 'pg';
import { createTestDatabase, insertJob, at, jobRow, runRows, FIXTURE_HOLDER, type TestDatabase } from '@kairos/testing';
import { WITHDRAW_CHANNEL } from './notifications';
import type { Store } from './store';

const T0 = new Date('2030-01-01T00:00:00.000Z');
const LEASE_MS = 10_000;

describe('pre-dispatched leases at the store', () => {
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

  const claim = (now: Date, horizonMs: number) =>
    store.lease.claimDue({ owner: FIXTURE_HOLDER.owner, tokenId: null, namespace: 'default', tasks: ['noop'], limit: 10, leaseMs: LEASE_MS, horizonMs, now });

  /** A one-off job due at T0 + 1 s, claimed at T0 with a 2 s look-ahead. */
  async function preDispatchedJob() {
    const id = await insertJob(db.pool, { runAt: at(T0, 1_000) });
    const [claimed] = await claim(T0, 2_000);
    expect(claimed).toMatchObject({ jobId: id, dueAtMs: T0.getTime() + 1_000, claimedAtMs: T0.getTime() });
    return { id, lease: { ...FIXTURE_HOLDER, jobId: id, leaseGeneration: claimed!.leaseGeneration } };
  }

  it('claims within the look-ahead only, due jobs first, and stamps the run with its due instant', async () => {
    const late = await insertJob(db.pool, { runAt: at(T0, 3_000) });
    const soon = await insertJob(db.pool, { runAt: at(T0, 1_000) });
    const due = await insertJob(db.pool, { runAt: at(T0, -500) });
    expect(await claim(T0, 0)).toEqual([expect.objectContaining({ jobId: due })]);
    const ahead = await claim(T0, 2_000);
    expect(ahead.map((job) => job.jobId)).toEqual([soon]);
    expect((await runRows(db.pool, soon))[0].started_at).toEqual(at(T0, 1_000));
    expect((await jobRow(db.pool, late)).state).toBe('DUE');
  });

  it('a start-queue claim (futureOnly) takes jobs not yet due, never due ones', async () => {
    const due = await insertJob(db.pool, { runAt: at(T0, -500) });
    const now = await insertJob(db.pool, { runAt: T0 });
    const soon = await insertJob(db.pool, { runAt: at(T0, 1_000) });
    const queued = await store.lease.claimDue({
      owner: FIXTURE_HOLDER.owner,
      tokenId: null,
      namespace: 'default',
      tasks: ['noop'],
      limit: 10,
      leaseMs: LEASE_MS,
      horizonMs: 2_000,
      futureOnly: true,
      now: T0,
    });
    expect(queued.map((job) => job.jobId)).toEqual([soon]);
    expect((await jobRow(db.pool, due)).state).toBe('DUE');
    expect((await jobRow(db.pool, now)).state).toBe('DUE');
  });

  it('a release for a withdrawal holds the job for the requester; the cancel clears the hold', async () => {
    const { id, lease } = await preDispatchedJob();
    const listener = new Client({ connectionString: db.url });
    await listener.connect();
    try {
      const heard = new Promise<string | undefined>((resolve) => listener.on('notification', (message) => resolve(message.payload)));
      await listener.query(`LISTEN ${WITHDRAW_CHANNEL}`);
      expect(await store.lease.requestWithdraw('default', id, at(T0, 100))).toEqual({ kind: 'requested', leaseGeneration: 1, leaseOwner: 'agent-fixture' });
      expect(await heard).toBe(`${id}:1`);
    } finally {
      await listener.end();
    }
    // The holder gives it back: DUE, held, and no claim takes it while held.
    expect(await store.lease.release([lease], 'withdrawn', at(T0, 200))).toEqual([expect.objectContaining({ kind: 'released' })]);
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DUE', attempt: 0, held_until: at(T0, 5_200), withdraw_generation: null });
    expect(await claim(at(T0, 300), 2_000)).toEqual([]);
    expect(await store.lease.awaitWithdrawal(id, 1, 1_000, at(T0, 300))).toBe('withdrawn');
    // The withdrawn run never started: recorded CANCELLED, started no later than its release.
    const [run] = await runRows(db.pool, id);
    expect(run).toMatchObject({ outcome: 'CANCELLED', started_at: at(T0, 200) });
    expect(await store.lease.cancel('default', id, at(T0, 300))).toEqual({ kind: 'cancelled' });
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'CANCELLED', held_until: null });
  });

  it('a hold ends on its own: a requester that died only delays the job', async () => {
    const { id, lease } = await preDispatchedJob();
    await store.lease.requestWithdraw('default', id, at(T0, 100));
    await store.lease.release([lease], 'withdrawn', at(T0, 200));
    expect(await claim(at(T0, 5_100), 2_000)).toEqual([]);
    expect(await claim(at(T0, 5_300), 2_000)).toEqual([expect.objectContaining({ jobId: id, leaseGeneration: 2 })]);
  });

  it('a refusal (the run started) ends the request; the job stays claimed', async () => {
    const { id, lease } = await preDispatchedJob();
    await store.lease.requestWithdraw('default', id, at(T0, 100));
    // Only the holder can refuse.
    expect(await store.lease.refuseWithdraw([{ ...lease, owner: 'someone-else' }])).toBe(0);
    expect(await store.lease.refuseWithdraw([lease])).toBe(1);
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'CLAIMED', withdraw_generation: null });
    expect(await store.lease.awaitWithdrawal(id, 1, 1_000, at(T0, 200))).toBe('refused');
  });

  it('an unanswered request is retracted when the wait runs out; a release after that is an ordinary one', async () => {
    const { id, lease } = await preDispatchedJob();
    await store.lease.requestWithdraw('default', id, at(T0, 100));
    expect(await store.lease.awaitWithdrawal(id, 1, 30, at(T0, 100))).toBe('timed-out');
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'CLAIMED', withdraw_generation: null, withdraw_requested_at: null });
    await store.lease.release([lease], 'late answer', at(T0, 200));
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DUE', held_until: null });
  });

  it('nothing to withdraw once the due instant has passed, or when the job is not claimed', async () => {
    const { id } = await preDispatchedJob();
    expect(await store.lease.requestWithdraw('default', id, at(T0, 1_000))).toEqual({ kind: 'not-pre-dispatched' });
    const waiting = await insertJob(db.pool, { runAt: at(T0, 60_000) });
    expect(await store.lease.requestWithdraw('default', waiting, T0)).toEqual({ kind: 'not-pre-dispatched' });
    expect(await store.lease.requestWithdraw('other', id, T0)).toEqual({ kind: 'not-pre-dispatched' });
  });
});
