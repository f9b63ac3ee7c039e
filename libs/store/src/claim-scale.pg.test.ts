import { createTestDatabase, explainAnalyze, findPlanNodes, insertDueJobs, at, type PlanNode, type TestDatabase } from '@kairos/testing';
import { CLAIM_SQL } from './lease';

/**
 * The claim must cost the same whether few or many jobs wait in the future: it
 * reads the head of the partial index only. Measured in buffers touched (which
 * is deterministic), not in milliseconds; the timings live in tools/bench.
 */
describe('claim cost does not grow with far-future jobs', () => {
  const now = new Date('2030-01-01T00:00:00.000Z');
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  /**
   * The claim's plan, analysed in a transaction rolled back. `generic`: the
   * plan PostgreSQL caches for the prepared statement (lease.claimDue runs it
   * as a named statement, and after five executions the server may keep one
   * plan for every parameter value), forced here.
   */
  async function explainClaim(expectedRows = 500, generic = false): Promise<{ plan: string; root: PlanNode; buffers: number }> {
    const params = [now, ['noop'], 500, 'w', 10_000, 60_000, 'default', null, 0, false];
    const { root, text } = await explainAnalyze(db.pool, CLAIM_SQL, params, generic ? 'generic' : 'bound');
    if (root['Actual Rows'] !== expectedRows) {
      throw new Error(`expected ${expectedRows} claimed rows, plan says ${root['Actual Rows']}`);
    }
    // Buffers touched by the scan that feeds the claim (the `due` CTE).
    const scan = findNode(root, (node) => node['Index Name'] === 'jobs_due_next_run_at_idx');
    if (!scan) throw new Error(`claim does not scan jobs_due_next_run_at_idx: ${text}`);
    return { plan: text, root, buffers: Number(scan['Shared Hit Blocks'] ?? 0) + Number(scan['Shared Read Blocks'] ?? 0) };
  }

  it('reads about as many index pages with 1,000,000 future jobs as with 10,000', async () => {
    await insertDueJobs(db.pool, { count: 500, nextRunAt: at(now, -1000) });
    await insertDueJobs(db.pool, { count: 10_000, nextRunAt: at(now, 60_000), spreadMs: 86_400_000 });
    await db.pool.query('VACUUM ANALYZE jobs');
    const small = await explainClaim();

    await insertDueJobs(db.pool, { count: 990_000, nextRunAt: at(now, 60_000), spreadMs: 30 * 86_400_000 });
    await db.pool.query('VACUUM ANALYZE jobs');
    const large = await explainClaim();

    expect(small.plan).toContain('jobs_due_next_run_at_idx');
    expect(large.plan).toContain('jobs_due_next_run_at_idx');
    expect(large.buffers).toBeLessThanOrEqual(small.buffers * 1.5 + 10);

    // Spikes that came due after the last ANALYZE: 10 and then 10,000 due rows
    // the statistics know nothing about (they were analysed with none due).
    // The claim must still walk the index in order and stop at its LIMIT; the
    // planner's estimate must not lead it to read and sort every due row.
    await db.pool.query('DELETE FROM jobs WHERE next_run_at <= $1', [now]);
    await db.pool.query('VACUUM ANALYZE jobs');
    await insertDueJobs(db.pool, { count: 10, nextRunAt: at(now, -1000) });
    expectOrderedIndexScan(await explainClaim(10), 10);
    expectOrderedIndexScan(await explainClaim(10, true), 10);
    await insertDueJobs(db.pool, { count: 9_990, nextRunAt: at(now, -500) });
    expectOrderedIndexScan(await explainClaim(500), 500);
    expectOrderedIndexScan(await explainClaim(500, true), 500);
  }, 120_000);
});

/** The due rows come from an ordered index scan cut off at the LIMIT, and no Sort reads more than the LIMIT. */
function expectOrderedIndexScan(claim: { plan: string; root: PlanNode }, limit: number): void {
  const scan = findNode(claim.root, (node) => node['Index Name'] === 'jobs_due_next_run_at_idx');
  if (scan === undefined || String(scan['Node Type']) !== 'Index Scan' || Number(scan['Actual Rows'] ?? 0) > limit) {
    throw new Error(`the claim does not read jobs_due_next_run_at_idx in order up to its LIMIT: ${claim.plan}`);
  }
  for (const sort of findPlanNodes(claim.root, (node) => node['Node Type'] === 'Sort')) {
    // The sorted input is the Outer child; CTEs hang off the same node as InitPlans.
    const input = Number((sort.Plans ?? []).find((child) => child['Parent Relationship'] === 'Outer')?.['Actual Rows'] ?? 0);
    if (input > limit) throw new Error(`the claim sorts ${input} rows, more than its LIMIT of ${limit}: ${claim.plan}`);
  }
}

/** The first node `match` accepts, with its numeric fields typed as numbers. */
function findNode(node: PlanNode, match: (node: PlanNode) => boolean): (PlanNode & Record<string, number>) | undefined {
  return findPlanNodes(node, match)[0] as (PlanNode & Record<string, number>) | undefined;
}
