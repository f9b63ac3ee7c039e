/**
 * The statement-cost probe on a small table: it claims and completes every
 * job through the store's own statements and reports backend CPU for each.
 * No figure is asserted beyond its being measured (the benchmark is not a
 * test); what is asserted is that the probe did the work it reports.
 */
import { createPool } from '@kairos/store';
import { createTestDatabase, type TestDatabase } from '@kairos/testing';
import { UUID_V7_SQL } from './common';
import { measureStatements, type Shape } from './statement-cost';

describe('statement-cost probe', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('claims and completes every seeded job, and reports backend CPU for both statements', async () => {
    const pool = createPool({ connectionString: db.url, max: 1 });
    try {
      const cost = await measureStatements(pool, { jobs: 600, batch: 250 });
      expect(cost.jobs).toBe(600);
      for (const us of [cost.claimUsPerJob, cost.completeUsPerJob]) {
        expect(Number.isFinite(us)).toBe(true);
        expect(us).toBeGreaterThan(0);
      }
    } finally {
      await pool.end();
    }
    const { rows } = await db.pool.query(
      `SELECT (SELECT count(*) FROM jobs WHERE state = 'COMPLETED')::int AS completed,
              (SELECT count(*) FROM runs WHERE outcome = 'SUCCEEDED')::int AS succeeded,
              (SELECT count(*) FROM runs)::int AS runs`,
    );
    expect(rows[0]).toEqual({ completed: 600, succeeded: 600, runs: 600 });
  });

  it('keeps the held leases claimed while it measures the others', async () => {
    const pool = createPool({ connectionString: db.url, max: 1 });
    try {
      const cost = await measureStatements(pool, { jobs: 300, batch: 250, held: 400 });
      expect(cost.jobs).toBe(300);
    } finally {
      await pool.end();
    }
    const { rows } = await db.pool.query(
      `SELECT task, state::text, count(*)::int AS n FROM jobs WHERE payload ? 'd' GROUP BY task, state ORDER BY task, state`,
    );
    expect(rows).toEqual([
      { task: 'long', state: 'CLAIMED', n: 400 },
      { task: 'noop', state: 'COMPLETED', n: 900 },
    ]);
  });

  it('seeds ids like the API\'s: UUIDv7, the clock\'s milliseconds first', async () => {
    const { rows } = await db.pool.query<{ id: string; ms: string }>(
      `SELECT id::text, floor(date_part('epoch', clock_timestamp()) * 1000)::bigint AS ms FROM (SELECT ${UUID_V7_SQL} AS id FROM generate_series(1, 2000)) s`,
    );
    const distinct = new Set(rows.map((row) => row.id));
    expect(distinct.size).toBe(2000);
    for (const { id, ms } of rows) {
      // Version 7, RFC variant (10xx), and a timestamp no later than the clock read after it.
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const idMs = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
      expect(idMs).toBeLessThanOrEqual(Number(ms));
      expect(Number(ms) - idMs).toBeLessThan(60_000);
    }
  });

  it('reports the WAL each statement wrote, and no HOT update for the store\'s completion, which changes indexed columns', async () => {
    const pool = createPool({ connectionString: db.url, max: 1 });
    try {
      const cost = await measureStatements(pool, { jobs: 300, batch: 100 });
      // A claim writes at least its new row version (over 200 bytes), a completion too.
      expect(cost.claimWalBytesPerJob).toBeGreaterThan(200);
      expect(cost.completeWalBytesPerJob).toBeGreaterThan(200);
      expect(cost.hotUpdates).toBe(0);
    } finally {
      await pool.end();
    }
  });

  it('refuses a pool of more than one connection, before touching the database', async () => {
    const pool = createPool({ connectionString: db.url, max: 2 });
    try {
      await expect(measureStatements(pool, { jobs: 10, batch: 5 })).rejects.toThrow(/pool of one connection/);
    } finally {
      await pool.end();
    }
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE payload ? 'd'`);
    expect(rows[0].n).toBe(1600);
  });

  it('refuses a fill factor out of range and --held with a what-if shape, before touching the database', async () => {
    const pool = createPool({ connectionString: db.url, max: 1 });
    try {
      await expect(measureStatements(pool, { jobs: 10, batch: 5, fillfactor: 5 })).rejects.toThrow(/--fillfactor/);
      await expect(measureStatements(pool, { jobs: 10, batch: 5, held: 3, shape: 'hot' })).rejects.toThrow(/--held needs --shape kairos/);
    } finally {
      await pool.end();
    }
    const { rows } = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE payload ? 'd'`);
    expect(rows[0].n).toBe(1600);
  });
});

/**
 * The what-if shapes (`--shape`), each in a database of its own (`queue`
 * changes the schema): each must do the work it stands for, or its figures
 * price something else.
 */
describe('statement-cost probe, what-if shapes', () => {
  /** Runs one shape in a new database and reads what it left there with `inspect`. */
  const measure = async <T>(shape: Shape, fillfactor: number, inspect: (db: TestDatabase) => Promise<T>) => {
    const db = await createTestDatabase();
    const pool = createPool({ connectionString: db.url, max: 1 });
    try {
      const cost = await measureStatements(pool, { jobs: 400, batch: 100, shape, fillfactor });
      return { cost, left: await inspect(db) };
    } finally {
      await pool.end();
      await db.drop();
    }
  };
  const statesAndFill = async (db: TestDatabase) => {
    const { rows } = await db.pool.query(`SELECT state::text, count(*)::int AS n FROM jobs WHERE payload ? 'd' GROUP BY state ORDER BY state`);
    const { rows: fill } = await db.pool.query(`SELECT reloptions FROM pg_class WHERE oid = 'jobs'::regclass`);
    return { states: rows, reloptions: fill[0].reloptions as string[] | null };
  };

  it('hot: updates only unindexed columns, so with room on the page PostgreSQL makes most completions HOT', async () => {
    const { cost, left: { states, reloptions } } = await measure('hot', 50, statesAndFill);
    expect(reloptions).toEqual(['fillfactor=50']);
    expect(cost.jobs).toBe(400);
    // The jobs stay CLAIMED (it is a floor, not a completion); at half-empty pages most updates stay in place.
    expect(states).toEqual([{ state: 'CLAIMED', n: 400 }]);
    expect(cost.hotUpdates).toBeGreaterThan(200);
  });

  it('delete: the completion removes the job rows', async () => {
    const { cost, left: { states } } = await measure('delete', 100, statesAndFill);
    expect(cost.jobs).toBe(400);
    expect(states).toEqual([]);
    expect(cost.hotUpdates).toBe(0);
  });

  it('queue: the due and lease state live in their own table, which the completion empties; the job rows end COMPLETED', async () => {
    const { cost, left } = await measure('queue', 70, async (db) => {
      const { rows } = await db.pool.query(
        `SELECT (SELECT count(*) FROM live)::int AS live,
                (SELECT count(*) FROM jobs WHERE state = 'COMPLETED' AND run_finished_at IS NOT NULL AND attempt = 1)::int AS completed,
                (SELECT count(*) FROM pg_indexes WHERE tablename = 'jobs')::int AS job_indexes`,
      );
      return rows[0];
    });
    expect(cost.jobs).toBe(400);
    // The primary key and the idempotency index: nothing the completion's columns are in.
    expect(left).toEqual({ live: 0, completed: 400, job_indexes: 2 });
  });
});
