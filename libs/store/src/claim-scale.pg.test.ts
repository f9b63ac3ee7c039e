import { createTestDatabase, insertDueJobs, at, type TestDatabase } from '@kairos/testing';
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

  async function explainClaim(): Promise<{ plan: string; buffers: number }> {
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      // Same statement as lease.claimDue, analysed inside a transaction we roll back.
      const { rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${CLAIM_SQL}`, [
        now,
        ['noop'],
        500,
        'w',
        10_000,
        60_000,
      ]);
      const plan = rows[0]['QUERY PLAN'][0];
      const text = JSON.stringify(plan);
      if (plan.Plan['Actual Rows'] !== 500) throw new Error(`expected 500 claimed rows, plan says ${plan.Plan['Actual Rows']}`);
      // Buffers touched by the scan that feeds the claim (the `due` CTE).
      const scan = findNode(plan.Plan, (node) => node['Index Name'] === 'jobs_due_next_run_at_idx');
      if (!scan) throw new Error(`claim does not scan jobs_due_next_run_at_idx: ${text}`);
      return { plan: text, buffers: Number(scan['Shared Hit Blocks'] ?? 0) + Number(scan['Shared Read Blocks'] ?? 0) };
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
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
  }, 120_000);
});

type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

function findNode(node: PlanNode, match: (node: PlanNode) => boolean): (PlanNode & Record<string, number>) | undefined {
  if (match(node)) return node as PlanNode & Record<string, number>;
  for (const child of node.Plans ?? []) {
    const found = findNode(child, match);
    if (found) return found;
  }
  return undefined;
}
