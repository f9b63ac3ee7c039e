import type { PoolClient } from 'pg';
import { createTestDatabase, insertDueJobs, at, waitFor, type TestDatabase } from '@kairos/testing';
import type { ClaimedJob } from './lease/claim';
import { inIdOrder } from './lease/sql';
import type { Store } from './store';

/**
 * Every statement that locks a batch of held leases locks them in job-id
 * order, so two batches sharing leases (a heartbeat's renewal and an outcome
 * flush) cannot deadlock (lease/sql.ts, lockInIdOrder; a chaos finding). The
 * simple completion has no locking step of its own: its UPDATE locks rows as
 * it meets them, in the order of its input, which the store sorts.
 *
 * Observed from outside: another transaction holds one lease of the batch, the
 * statement waits on it, and the leases it has already locked are exactly the
 * ones with smaller ids (a third transaction's SKIP LOCKED sees the rest).
 */
describe('batches of held leases lock in job-id order', () => {
  const now = new Date('2030-01-01T00:00:00.000Z');
  const batch = 9;
  const leaseMs = 600_000;
  let db: TestDatabase;
  let store: Store;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = db.createStore();
  });
  afterAll(async () => {
    await db.drop();
  });

  /** Claims `batch` due jobs among `others` future ones; their leases sorted by id. */
  async function claimBatch(others: number): Promise<ClaimedJob[]> {
    await db.truncate();
    await insertDueJobs(db.pool, { count: batch, nextRunAt: at(now, -1000) });
    if (others > 0) await insertDueJobs(db.pool, { count: others, nextRunAt: at(now, 60_000), spreadMs: 86_400_000 });
    await db.pool.query('ANALYZE jobs');
    const claimed = await store.lease.claimDue({ now, tasks: ['noop'], limit: batch, owner: 'w', tokenId: null, leaseMs, namespace: 'default' });
    expect(claimed).toHaveLength(batch);
    return inIdOrder(claimed);
  }

  const held = (job: ClaimedJob) => ({ jobId: job.jobId, leaseGeneration: job.leaseGeneration, owner: 'w', tokenId: null });

  /** A transaction of its own holding the row lock of `jobId`; the caller ends it and releases the client. */
  async function holdLock(jobId: string): Promise<PoolClient> {
    const client = await db.pool.connect();
    await client.query('BEGIN');
    await client.query('SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE', [jobId]);
    return client;
  }

  /** Starts `statement` and resolves once a backend of this database waits for a row lock. */
  async function startedAndWaiting<T>(statement: () => Promise<T>): Promise<{ running: Promise<T> }> {
    const running = statement();
    running.catch(() => undefined);
    await waitFor(async () => {
      const { rows } = await db.pool.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
      );
      return rows[0].n >= 1;
    });
    return { running };
  }

  /** The leases of `jobs` no transaction holds a lock on (locked here in passing, then let go). */
  async function unlocked(jobs: readonly ClaimedJob[]): Promise<string[]> {
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query('SELECT id FROM jobs WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE SKIP LOCKED', [
        jobs.map((job) => job.jobId),
      ]);
      return rows.map((row) => row.id as string);
    } finally {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
    }
  }

  /**
   * Runs `statement` on the batch while another transaction holds the lease in the middle; answers
   * what was unlocked while the statement waited, and the statement's own result.
   */
  async function lockedBeforeTheMiddle<T>(jobs: ClaimedJob[], statement: () => Promise<T>): Promise<{ free: string[]; result: T }> {
    const blocker = await holdLock(jobs[Math.floor(batch / 2)]!.jobId);
    try {
      const { running } = await startedAndWaiting(statement);
      const free = await unlocked(jobs);
      await blocker.query('ROLLBACK');
      return { free, result: await running };
    } finally {
      blocker.release();
    }
  }

  for (const others of [0, 20_000]) {
    const table = others === 0 ? 'a table of the batch alone' : `${others} other jobs`;

    it(`a completion reported in reverse order locks in id order (${table})`, async () => {
      const jobs = await claimBatch(others);
      const reversed = [...jobs].reverse().map((job) => ({ ...held(job), outcome: 'SUCCEEDED' as const }));
      const { free, result } = await lockedBeforeTheMiddle(jobs, () => store.lease.complete(reversed, now));
      expect(free).toEqual(jobs.slice(Math.floor(batch / 2) + 1).map((job) => job.jobId));
      expect(result.map((r) => r.kind)).toEqual(reversed.map(() => 'recorded'));
    });

    it(`a renewal in reverse order locks in id order (${table})`, async () => {
      const jobs = await claimBatch(others);
      const reversed = [...jobs].reverse().map(held);
      // Past a sixth of the lease, so the renewal writes (a fresh lease is only read).
      const { free, result } = await lockedBeforeTheMiddle(jobs, () => store.lease.renew(reversed, leaseMs, at(now, 200_000)));
      expect(free).toEqual(jobs.slice(Math.floor(batch / 2) + 1).map((job) => job.jobId));
      expect(result.map((r) => r.kind)).toEqual(reversed.map(() => 'renewed'));
    });
  }

  it('a completion that PostgreSQL fails to break a deadlock is run again', async () => {
    // Another transaction takes the last lease, waits until the completion has locked the others and
    // waits for it, then asks for the first: a cycle. PostgreSQL fails one side; when the completion
    // is the one (its wait began first, so its check usually runs first), it must be run again.
    for (let round = 1; ; round++) {
      const jobs = await claimBatch(0);
      const [first, last] = [jobs[0]!, jobs[batch - 1]!];
      const reports = jobs.map((job) => ({ ...held(job), outcome: 'SUCCEEDED' as const }));
      const other = await holdLock(last.jobId);
      let otherFailed = false;
      try {
        const { running: completing } = await startedAndWaiting(() => store.lease.complete(reports, now));
        await other.query('SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE', [first.jobId]).catch((error: { code?: string }) => {
          expect(error.code).toBe('40P01');
          otherFailed = true;
        });
        await other.query(otherFailed ? 'ROLLBACK' : 'COMMIT');
        const results = await completing;
        expect(results.map((r) => r.kind)).toEqual(reports.map(() => 'recorded'));
        const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE state = 'COMPLETED'`);
        expect(rows[0].n).toBe(batch);
      } finally {
        other.release();
      }
      // The other transaction was the one failed: the completion had nothing to retry; try again.
      if (!otherFailed) return;
      if (round === 5) throw new Error('PostgreSQL failed the other transaction in five rounds out of five');
    }
  }, 60_000);
});
