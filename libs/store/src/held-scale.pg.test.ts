import { createTestDatabase, explainAnalyze, findPlanNodes, insertDueJobs, at, type AnalysedPlan, type PlanNode, type TestDatabase } from '@kairos/testing';
import { COMPLETE_SIMPLE_SQL, LOCK_ENDINGS_SQL, REFUSE_WITHDRAW_SQL, RELEASE_SQL, RENEW_SQL, SETTLE_JOBS_SQL } from './lease';
import { claimDue, type ClaimedJob } from './lease/claim';
import { inIdOrder } from './lease/sql';

/**
 * A renewal or a completion names a batch of leases; it must read those rows
 * by primary key whatever else is CLAIMED. The trap (lease/sql.ts, heldJobs):
 * with statistics gathered while the jobs were DUE, the planner took the
 * partial index of CLAIMED rows for a small one and read all of it for every
 * batch. Measured in rows the plan reads from `jobs`, which is deterministic.
 */
describe('renewal and completion cost does not grow with other claimed jobs', () => {
  const now = new Date('2030-01-01T00:00:00.000Z');
  const claimedJobs = 20_000;
  const otherJobs = 100_000;
  const batch = 250;
  let db: TestDatabase;
  /** A renewal as large as a group commit of several agents' heartbeats. */
  const heartbeat = 2_000;
  let named: { ids: string[]; generations: number[] };
  let manyNamed: { ids: string[]; generations: number[] };

  beforeAll(async () => {
    db = await createTestDatabase();
    // The claimed jobs among a table of others (future ones), as in production:
    // a table of CLAIMED rows alone makes reading all of it a fair plan.
    await insertDueJobs(db.pool, { count: claimedJobs, nextRunAt: at(now, -1000) });
    await insertDueJobs(db.pool, { count: otherJobs, nextRunAt: at(now, 60_000), spreadMs: 86_400_000 });
    // Statistics from a table of DUE rows, kept that way while they are claimed.
    await db.pool.query('ALTER TABLE jobs SET (autovacuum_enabled = off)');
    await db.pool.query('VACUUM ANALYZE jobs');
    const claimed: ClaimedJob[] = [];
    for (;;) {
      const rows = await claimDue(db.pool, { now, tasks: ['noop'], limit: 5_000, owner: 'w', tokenId: null, leaseMs: 600_000, namespace: 'default' });
      if (rows.length === 0) break;
      claimed.push(...rows);
    }
    expect(claimed).toHaveLength(claimedJobs);
    // In job-id order, as the store passes them.
    const leasesOf = (jobs: ClaimedJob[]) => {
      const sorted = inIdOrder(jobs);
      return { ids: sorted.map((job) => job.jobId), generations: sorted.map((job) => job.leaseGeneration) };
    };
    named = leasesOf(claimed.slice(0, batch));
    manyNamed = leasesOf(claimed.slice(0, heartbeat));
  }, 120_000);
  afterAll(async () => {
    await db.drop();
  });

  /** The statement's plan for the named leases, after its `leading` parameters. */
  function explain(sql: string, leading: unknown[], generic: boolean, leases = named, trailing: unknown[] = []): Promise<AnalysedPlan> {
    const holders = [leases.ids, leases.generations, leases.ids.map(() => 'w'), leases.ids.map(() => null)];
    return explainAnalyze(db.pool, sql, [...leading, ...holders, ...trailing], generic ? 'generic' : 'custom');
  }

  /** Rows every scan of `jobs` produced or filtered away, over all its loops. */
  function rowsRead(root: PlanNode): number {
    const scans = findPlanNodes(root, (node) => node['Relation Name'] === 'jobs' && String(node['Node Type']).includes('Scan'));
    const perLoop = (node: PlanNode) =>
      Number(node['Actual Rows'] ?? 0) + Number(node['Rows Removed by Filter'] ?? 0) + Number(node['Rows Removed by Index Recheck'] ?? 0);
    return scans.reduce((sum, node) => sum + perLoop(node) * Number(node['Actual Loops'] ?? 1), 0);
  }

  /**
   * The plan reads `jobs` only by primary key: neither the index of every claimed job nor a scan of the table,
   * and at most `perLease` rows for each of the `leases` named (plus `slack`).
   */
  function expectByPrimaryKey(plan: AnalysedPlan, perLease: number, leases = batch, slack = 0): void {
    if (plan.text.includes('jobs_claimed_lease_until_idx')) throw new Error(`reads the index of every claimed job: ${plan.text}`);
    const scans = findPlanNodes(plan.root, (node) => node['Relation Name'] === 'jobs' && node['Node Type'] === 'Seq Scan');
    const read = rowsRead(plan.root);
    if (scans.length > 0 || read > perLease * leases + slack) throw new Error(`reads ${read} rows of jobs for ${leases} named leases: ${plan.text}`);
  }

  /**
   * The rows the statement's UPDATE was given to write: the batch, so the plan did the work it was asked. Its
   * input's count, not its own, which is 0 for an UPDATE without RETURNING.
   */
  function updated(root: PlanNode): number {
    return findPlanNodes(root, (node) => node['Node Type'] === 'ModifyTable' && node['Operation'] === 'Update').reduce(
      (sum, node) => sum + Number((node['Plans'] as PlanNode[] | undefined)?.[0]?.['Actual Rows'] ?? 0),
      0,
    );
  }

  /**
   * The rows the statement's row-lock nodes locked: the batch, so the plan did the work it was asked. A lock
   * taken per lease inside a subquery (renewal) shows as a node looped once per lease, under one that passes
   * the locked rows on: the largest count of any node is the number of rows locked.
   */
  function locked(root: PlanNode): number {
    const counts = findPlanNodes(root, (node) => node['Node Type'] === 'LockRows').map(
      (node) => Number(node['Actual Rows'] ?? 0) * Number(node['Actual Loops'] ?? 1),
    );
    return Math.max(0, ...counts);
  }

  for (const statistics of ['stale', 'fresh'] as const) {
    describe(`${statistics} statistics`, () => {
      // The stale cases run first, on the statistics beforeAll left.
      if (statistics === 'fresh') beforeAll(() => db.pool.query('ANALYZE jobs'));

      for (const generic of [false, true]) {
        const label = `${statistics} statistics, ${generic ? 'generic' : 'custom'} plan`;

        it(`completion reads the named leases by primary key, in the order named (${label})`, async () => {
          const plan = await explain(COMPLETE_SIMPLE_SQL, [now], generic);
          expect(updated(plan.root)).toBe(batch);
          // The UPDATE's one lookup per lease, which is also its row lock: a probe per named lease, in the
          // order of the arrays (what lock-order.pg.test.ts relies on).
          expectByPrimaryKey(plan, 1);
          const probes = findPlanNodes(plan.root, (node) => node['Relation Name'] === 'jobs' && String(node['Node Type']).includes('Index'));
          expect(probes.map((node) => [node['Index Name'], node['Actual Loops']])).toEqual([['jobs_pkey', batch]]);
        });

        it(`renewal reads the named leases by primary key (${label})`, async () => {
          // Past a sixth of the lease: not fresh, so the rows are read, found stale, locked and extended.
          const plan = await explain(RENEW_SQL, [at(now, 200_000), 600_000, 30_000], generic);
          expect(locked(plan.root)).toBe(batch);
          // The fresh read, the lock, the UPDATE's lookup.
          expectByPrimaryKey(plan, 3);
        });

        it(`a renewal of ${heartbeat} fresh leases reads them by primary key (${label})`, async () => {
          // Fresh: a read only. With the join, the custom plan scanned the whole table and the batch's
          // array again for every CLAIMED row (490 ms for 1,024 leases).
          const plan = await explain(RENEW_SQL, [at(now, 1_000), 600_000, 30_000], generic, manyNamed);
          expect(plan.root['Actual Rows']).toBe(heartbeat);
          expect(locked(plan.root)).toBe(0);
          // The fresh read and the lock step's look at each lease (the UPDATE, with nothing to write, may
          // start one scan); the join plan read every row of the table.
          expectByPrimaryKey(plan, 2, heartbeat, 10);
        });

        // The other batches that lock held leases. Sorting the joined rows (ORDER BY id FOR UPDATE) read
        // the whole table for a batch this large, hash-joined with the batch.
        it(`the locking step of ${heartbeat} endings reads them by primary key (${label})`, async () => {
          const plan = await explain(LOCK_ENDINGS_SQL, [now], generic, manyNamed);
          expect(locked(plan.root)).toBe(heartbeat);
          expectByPrimaryKey(plan, 1, heartbeat, 10);
        });

        it(`the settlement of ${heartbeat} endings writes them by primary key (${label})`, async () => {
          // The general completion's UPDATE, after its lock step: one element per job.
          const nulls = manyNamed.ids.map(() => null);
          const params = [manyNamed.ids, manyNamed.ids.map(() => 'COMPLETED'), nulls, nulls, manyNamed.ids.map(() => 1), ...Array(6).fill(nulls), now];
          const plan = await explainAnalyze(db.pool, SETTLE_JOBS_SQL, params, generic ? 'generic' : 'custom');
          expect(updated(plan.root)).toBe(heartbeat);
          expectByPrimaryKey(plan, 1, heartbeat, 10);
        });

        it(`a release of ${heartbeat} leases reads them by primary key (${label})`, async () => {
          const plan = await explain(RELEASE_SQL, [now], generic, manyNamed, [manyNamed.ids.map(() => 'draining')]);
          expect(updated(plan.root)).toBe(heartbeat);
          // The lock, and the UPDATE's lookup of each locked row.
          expectByPrimaryKey(plan, 2, heartbeat, 10);
        });

        it(`ending the withdrawal requests of ${heartbeat} leases reads them by primary key (${label})`, async () => {
          const plan = await explain(REFUSE_WITHDRAW_SQL, [], generic, manyNamed);
          expect(locked(plan.root)).toBe(heartbeat);
          expectByPrimaryKey(plan, 2, heartbeat, 10);
        });

        it(`a renewal of ${heartbeat} leases past a sixth reads them by primary key (${label})`, async () => {
          const plan = await explain(RENEW_SQL, [at(now, 200_000), 600_000, 30_000], generic, manyNamed);
          expect(locked(plan.root)).toBe(heartbeat);
          expect(updated(plan.root)).toBe(heartbeat);
          // The fresh read, the lock, the UPDATE's lookup.
          expectByPrimaryKey(plan, 3, heartbeat, 10);
        });
      }
    });
  }
});
