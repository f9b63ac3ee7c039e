import { createPool, createStore } from './index';
import { createTestDatabase, insertJob, type TestDatabase } from '@kairos/testing';

/**
 * Regression (found by tools/chaos, PostgreSQL crash): a connection that died
 * while a transaction was between two statements made the pg client emit an
 * 'error' event nobody listened to, and the coordinator process crashed. Every
 * failure must arrive as a rejected promise instead.
 */
describe('connections dying mid-transaction', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('turns into rejected calls, never an unhandled error event', async () => {
    const store = createStore(createPool({ connectionString: db.url, max: 4, application_name: 'victim' }));
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown) => uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    try {
      for (let i = 0; i < 50; i++) {
        await insertJob(db.pool, { state: 'CLAIMED', leaseUntil: new Date(Date.now() - 1_000) });
        await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 1, schedule: '* * * * *', occurrenceAt: new Date() });
      }
      const { rows } = await db.pool.query(`SELECT id FROM jobs WHERE schedule IS NOT NULL`);
      let failures = 0;
      let kills = 0;
      const deadline = Date.now() + 1_500;
      const killer = (async () => {
        while (Date.now() < deadline) {
          const { rowCount } = await db.pool.query(
            `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'victim' AND pid <> pg_backend_pid()`,
          );
          kills += rowCount ?? 0;
          await new Promise((resolve) => setImmediate(resolve));
        }
      })();
      while (Date.now() < deadline) {
        const calls = [
          store.lease.reapExpired({ limit: 5 }),
          store.lease.complete(rows.slice(0, 10).map((r) => ({ jobId: r.id, leaseGeneration: 1, owner: 'agent-fixture', tokenId: null, outcome: 'FAILED' as const }))),
          store.jobs.get('default', rows[0].id),
        ];
        for (const result of await Promise.allSettled(calls)) if (result.status === 'rejected') failures++;
      }
      await killer;
      expect(kills).toBeGreaterThan(0);
      expect(failures).toBeGreaterThan(0);
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
      await store.close().catch(() => undefined);
    }
  }, 30_000);
});
