import { at, createTestDatabase, explainAnalyze, findPlanNodes, insertDueJobs, type PlanNode, type TestDatabase } from '@kairos/testing';
import { EXPIRED_SQL, MISFIRED_SQL, OVERLAPPED_SQL } from './lease';

/**
 * The reaper's three statements run on every pass (every lease/4) whatever the
 * size of the schedule: each must read an index, never the whole jobs table.
 * The misfire sweep used to be one statement OR-ing its `skip` and `catch-up`
 * tests, which PostgreSQL answered with a sequential scan: 0.3-0.5 s of
 * database CPU per pass at a million jobs. Measured in plan nodes and buffers
 * touched (deterministic), not in milliseconds.
 */
describe('the reaper reads indexes, not the jobs table', () => {
  const now = new Date('2030-01-01T00:00:00.000Z');
  const FUTURE_JOBS = 200_000;
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
    await insertDueJobs(db.pool, { count: FUTURE_JOBS, nextRunAt: at(now, 60_000), spreadMs: 30 * 86_400_000 });
    // Late recurring jobs: three `skip` ones an hour late, a `catch-up` one outside its
    // one-minute window, one inside it, and a `fire-once` one (never moved on).
    const late = at(now, -3_600_000);
    await db.pool.query(
      `INSERT INTO jobs (task, schedule, occurrence_at, next_run_at, state, misfire_policy, catchup_window_ms)
       VALUES ('noop', '* * * * *', $1, $1, 'DUE', 'skip', NULL), ('noop', '* * * * *', $1, $1, 'DUE', 'skip', NULL),
              ('noop', '* * * * *', $1, $1, 'DUE', 'skip', NULL), ('noop', '* * * * *', $1, $1, 'DUE', 'catch-up', 60000),
              ('noop', '* * * * *', $2, $2, 'DUE', 'catch-up', 60000), ('noop', '* * * * *', $1, $1, 'DUE', 'fire-once', NULL)`,
      [late, at(now, -30_000)],
    );
    await db.pool.query('VACUUM ANALYZE jobs');
  }, 120_000);
  afterAll(async () => {
    await db.drop();
  });

  async function explain(sql: string, params: unknown[]): Promise<{ root: PlanNode; text: string; rows: number }> {
    const plan = await explainAnalyze(db.pool, sql, params);
    return { ...plan, rows: Number(plan.root['Actual Rows']) };
  }

  function expectNoTableScan(plan: { root: PlanNode; text: string }): void {
    const scans = findPlanNodes(plan.root, (node) => node['Node Type'] === 'Seq Scan' && node['Relation Name'] === 'jobs');
    if (scans.length > 0) throw new Error(`reads the whole jobs table (Seq Scan): ${plan.text}`);
    const buffers = findPlanNodes(plan.root, () => true).reduce(
      (most, node) => Math.max(most, Number(node['Shared Hit Blocks'] ?? 0) + Number(node['Shared Read Blocks'] ?? 0)),
      0,
    );
    // The table is thousands of pages; the sweeps touch a handful.
    expect(buffers).toBeLessThan(200);
  }

  it('the misfire sweep finds the late skip and catch-up jobs through indexes', async () => {
    const plan = await explain(MISFIRED_SQL, [now, 60_000, 1000]);
    expectNoTableScan(plan);
    expect(plan.rows).toBe(4);
  });

  it('the expired-lease sweep and the cancel-other sweep', async () => {
    await db.pool.query(
      `UPDATE jobs SET state = 'CLAIMED', lease_until = $1, lease_owner = 'a', lease_generation = 1, next_run_at = NULL,
         run_id = nextval('ended_runs_id_seq'), run_started_at = now()
       WHERE id IN (SELECT id FROM jobs WHERE schedule IS NULL ORDER BY next_run_at LIMIT 5)`,
      [at(now, -1_000)],
    );
    const expired = await explain(EXPIRED_SQL, [now, 1000]);
    expectNoTableScan(expired);
    expect(expired.rows).toBe(5);
    expectNoTableScan(await explain(OVERLAPPED_SQL, [now, 1000]));
  });
});
