import type { Pool } from 'pg';

/** A node of `EXPLAIN (FORMAT JSON)` output, its children under `Plans`. */
export type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

/** Every node of the plan tree under (and including) `node` that `match` accepts, depth first. */
export function findPlanNodes(node: PlanNode, match: (node: PlanNode) => boolean, found: PlanNode[] = []): PlanNode[] {
  if (match(node)) found.push(node);
  for (const child of node.Plans ?? []) findPlanNodes(child, match, found);
  return found;
}

/** The analysed plan: its root node and the whole plan as JSON text, for error messages. */
export interface AnalysedPlan {
  root: PlanNode;
  text: string;
}

/**
 * How the statement is planned. `bound`: run with its parameters bound (the
 * planner sees their values). `custom` and `generic`: prepared and executed
 * with that plan forced; `generic` is the plan PostgreSQL may cache for a
 * named statement after five executions, one plan for every parameter value.
 */
export type PlanMode = 'bound' | 'custom' | 'generic';

/**
 * `sql` with `params` under EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON), in a
 * transaction rolled back, so the statement changes nothing. For `custom` and
 * `generic`, the parameters are written into EXECUTE as literals: dates,
 * numbers, strings without quotes or commas, and arrays of those (null as
 * NULL); the plan kind is checked in pg_prepared_statements.
 */
export async function explainAnalyze(pool: Pool, sql: string, params: readonly unknown[], mode: PlanMode = 'bound'): Promise<AnalysedPlan> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    let rows;
    if (mode === 'bound') {
      ({ rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, [...params]));
    } else {
      await client.query(`SET LOCAL plan_cache_mode = force_${mode}_plan`);
      await client.query(`PREPARE explained AS ${sql}`);
      ({ rows } = await client.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE explained(${params.map(literal).join(', ')})`));
      const { rows: [plans] } = await client.query("SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = 'explained'");
      if (Number(plans[`${mode}_plans`]) !== 1) throw new Error(`expected a ${mode} plan: ${JSON.stringify(plans)}`);
    }
    const plan = rows[0]['QUERY PLAN'][0];
    return { root: plan.Plan as PlanNode, text: JSON.stringify(plan) };
  } finally {
    await client.query('ROLLBACK');
    // PREPARE is not transactional.
    if (mode !== 'bound') await client.query('DEALLOCATE ALL');
    client.release();
  }
}

function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL';
  if (value instanceof Date) return `'${value.toISOString()}'`;
  if (Array.isArray(value)) return `'{${value.map((element) => (element === null ? 'NULL' : String(element))).join(',')}}'`;
  return `'${String(value)}'`;
}
