/**
 * What the lease statements share: the clock expressions (the database
 * decides time; tests may pin it), id-ordered row locking of held leases, the
 * read that says why a lease was refused, and transactions.
 */
import type { Pool, PoolClient } from 'pg';
import { isWellFormed, type HeldLeaseRef, type LeaseRef } from './refs';

export const NOW = (param: number) => `coalesce($${param}::timestamptz, now())`;
/**
 * The wall clock when the expression is evaluated, not when the transaction
 * began: used for a claimed run's `started_at`, read after the row lock, so it
 * can never precede the `finished_at` of the run that freed the job (with
 * `now()` it could, by a millisecond: chaos finding 5). Never in a WHERE
 * clause: it is volatile, so no index could serve it.
 */
export const CLOCK = (param: number) => `coalesce($${param}::timestamptz, clock_timestamp())`;

/**
 * A timestamptz as whole epoch milliseconds in a float8, which pg hands to JS
 * as a number (no Date parsing); whole, so protobuf Timestamps built from it
 * get integral nanos. Truncates like a JS Date of the same instant.
 *
 * In float8 throughout: `extract` returns numeric, and numeric arithmetic on
 * four instants per claimed row was 8 % of the claim's CPU in PostgreSQL.
 * `date_part` is the same instant in seconds as a float8, within a quarter of
 * a microsecond for any instant this century; `round` gives back its exact
 * microseconds (an integer below 2^53), and dividing that by 1000 cannot
 * round across a whole millisecond, so `floor` truncates exactly as before
 * (sql.pg.test.ts compares the two on random instants).
 */
export const EPOCH_MS = (expression: string) => `floor(round(date_part('epoch', ${expression}) * 1000000) / 1000)`;

/**
 * Row locks for a batch of held leases, taken in job-id order. A row matches
 * only with its generation AND its holder (agent id and token), so a lease
 * named by anyone but its holder locks nothing and changes nothing. Every
 * statement that locks several jobs does so in id order, so two batches
 * sharing leases (a heartbeat's renewal and an outcome flush) cannot
 * deadlock; an `UPDATE … FROM unnest(…)` alone locks in whatever order its
 * plan visits rows (found by tools/chaos: "deadlock detected" on renew).
 *
 * The order comes from the batch: `holderArrays` passes the leases in job-id
 * order, and each is looked up by primary key and locked as the loop over the
 * arrays reaches it (`heldJobsByKey`), whatever the batch's size or the
 * statistics. The simple completion gets the same order from its UPDATE, in a
 * plan that visits the input in order (decision 0031). Sorting the joined rows
 * instead (`ORDER BY j.id FOR UPDATE`) let the planner read the whole table
 * for a large batch: 2,000 leases among 120,000 jobs were a sequential scan
 * hash-joined with the batch (held-scale.pg.test.ts).
 */
export function lockInIdOrder(firstParam: number, extraCondition = '', columns = 'j.id'): string {
  return `SELECT ${columns} FROM ${heldJobsByKey(firstParam, extraCondition)}
    FOR UPDATE OF j`;
}

/**
 * For an UPDATE of `jobs j` that writes a batch of rows already locked (after
 * `lockInIdOrder`, or earlier in the transaction): `j.id` among the ids that
 * `ids` (a subquery) selects, as an index condition on jobs_pkey. The ids are
 * an InitPlan's array, whose size the planner cannot see when it plans, so it
 * probes the key for each. Joined with the batch instead (`FROM locked WHERE
 * j.id = locked.id`, or `FROM unnest(…) u WHERE j.id = u.id` alone), 2,000
 * rows among 120,000 jobs were hash-joined with a scan of the whole table
 * (held-scale.pg.test.ts).
 */
export function jobIdIn(ids: string): string {
  return `j.id = ANY (ARRAY(${ids}))`;
}

/**
 * The CLAIMED rows a batch of held leases names (the arrays `holderArrays`
 * makes, from `firstParam`), `extraCondition` AND-ed to the match, one
 * primary-key lookup per named lease whatever the batch's size or the
 * statistics: a subquery per element of the arrays, which OFFSET 0 keeps the
 * planner from flattening into a join it may plan otherwise. With the join, a
 * renewal of 1,024 fresh leases among 100,000 jobs was planned as a scan of
 * the whole table that scanned the batch's array again for every CLAIMED row:
 * 490 ms, against 9 ms this way (held-scale.pg.test.ts). With `FOR UPDATE OF
 * j` the subquery locks each row as the loop reaches it, in the order of the
 * arrays and only if it matches (`lockInIdOrder`).
 */
export function heldJobsByKey(firstParam: number, extraCondition = ''): string {
  const held = heldLeases(firstParam);
  return `${held.from}
      CROSS JOIN LATERAL (SELECT j.* FROM jobs j WHERE ${held.match} AND ${held.claimed} ${extraCondition} OFFSET 0) j`;
}

/**
 * The parts of a statement over held leases, for `UPDATE jobs j … FROM ${from} WHERE ${match} AND ${claimed}`
 * or a subquery per lease (`heldJobsByKey`): the batch's arrays as `r(id, generation, owner, token)`, the
 * holder match, the state.
 *
 * The state is compared as text on purpose. Written `j.state = 'CLAIMED'`, the
 * condition matches the predicate of the partial index jobs_claimed_lease_until_idx,
 * and when the statistics were gathered while few jobs were CLAIMED (the usual
 * case: ANALYZE sees a table of DUE rows) the planner read that whole index and
 * hash-joined it with the batch: every CLAIMED row in the table for each renewal
 * and completion, 35-66 ms at 50,000 claimed jobs for a batch of 250, instead of
 * 2-7 ms by primary key. The cast is an expression no partial index predicate
 * can be proved from (held-scale.pg.test.ts pins the plans with stale and fresh
 * statistics).
 */
export function heldLeases(firstParam: number): { from: string; match: string; claimed: string } {
  const [ids, generations, owners, tokens] = [0, 1, 2, 3].map((offset) => `$${firstParam + offset}`);
  return {
    from: `unnest(${ids}::uuid[], ${generations}::bigint[], ${owners}::text[], ${tokens}::uuid[]) AS r(id, generation, owner, token)`,
    match: 'j.id = r.id AND j.lease_generation = r.generation AND j.lease_owner = r.owner AND j.lease_token IS NOT DISTINCT FROM r.token',
    claimed: "j.state::text = 'CLAIMED'",
  };
}

/**
 * `leases` in job-id order (uuid order: canonical ids compare like their
 * bytes). A statement that locks rows as its nested loop meets them, in the
 * order of its input arrays, then locks them as `lockInIdOrder` does.
 */
export function inIdOrder<T extends { readonly jobId: string }>(leases: readonly T[]): T[] {
  return [...leases].sort((a, b) => (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0));
}


/**
 * A CLAIMED job's run, as its row will be written (docs/decisions/0027): the
 * claim reserved `run_id` and stamped `run_started_at`; the rest is the job's
 * own, unchanged while it is CLAIMED. Select these with the row lock (the
 * values before the ending's UPDATE), then `insertEndedRuns` from that CTE.
 */
export const RUN_COLUMNS = 'j.id, j.run_id, j.attempt, j.lease_generation, j.occurrence_at, j.lease_owner, j.run_started_at, j.next_reason';

/**
 * The one INSERT that records ended runs, from a CTE (`source`) with the
 * columns of RUN_COLUMNS; `ended` is the SQL of the run's finished_at,
 * outcome, error, aborted_by (default NULL) and started_at (default the
 * source's run_started_at), over the CTE's columns.
 */
export function insertEndedRuns(
  source: string,
  ended: { finishedAt: string; outcome: string; error: string; abortedBy?: string; startedAt?: string },
  join = '',
): string {
  return `INSERT INTO ended_runs (id, job_id, attempt, lease_generation, scheduled_for, worker_id, started_at, finished_at, outcome, error, aborted_by, reason)
  OVERRIDING SYSTEM VALUE
  SELECT ${source}.run_id, ${source}.id, ${source}.attempt, ${source}.lease_generation, ${source}.occurrence_at, ${source}.lease_owner,
    ${ended.startedAt ?? `${source}.run_started_at`}, ${ended.finishedAt}, ${ended.outcome}, ${ended.error}, ${ended.abortedBy ?? 'NULL'},
    ${source}.next_reason
  FROM ${source} ${join}`;
}

/**
 * A batch of held leases as the parameters of `heldLeases` (ids, generations,
 * owners, tokens), in job-id order: the order every statement that locks them
 * takes its locks in (`lockInIdOrder`). Sorts `leases` itself, so no caller can
 * forget; a caller passing a parallel array of its own builds it from
 * `inIdOrder(leases)`.
 */
export function holderArrays(batch: readonly HeldLeaseRef[]): [string[], number[], string[], Array<string | null>] {
  const leases = inIdOrder(batch);
  return [
    leases.map((lease) => lease.jobId),
    leases.map((lease) => lease.leaseGeneration),
    leases.map((lease) => lease.owner),
    leases.map((lease) => lease.tokenId),
  ];
}

export interface CurrentHolder {
  generation: number;
  state: string;
  owner: string | null;
  tokenId: string | null;
}

export function isForeign(row: CurrentHolder, lease: HeldLeaseRef): boolean {
  return row.state === 'CLAIMED' && (row.owner !== lease.owner || row.tokenId !== lease.tokenId);
}

/** The current generation and holder of each named job (read after a refusal, to say why). */
export async function currentHolders(pool: Pool, leases: readonly LeaseRef[]): Promise<Map<string, CurrentHolder>> {
  const ids = [...new Set(leases.filter(isWellFormed).map((lease) => lease.jobId.toLowerCase()))];
  const result = new Map<string, CurrentHolder>();
  if (ids.length === 0) return result;
  const { rows } = await pool.query(
    'SELECT id, lease_generation, state, lease_owner, lease_token FROM jobs WHERE id = ANY($1::uuid[])',
    [ids],
  );
  for (const row of rows) {
    result.set(row.id, {
      generation: Number(row.lease_generation),
      state: row.state,
      owner: row.lease_owner,
      tokenId: row.lease_token,
    });
  }
  return result;
}

/** `stale`, or `not-owner` when the lease is current but held by someone else. */
export function refusal(lease: HeldLeaseRef, current: Map<string, CurrentHolder>): 'stale' | 'not-owner' {
  const row = isWellFormed(lease) ? current.get(lease.jobId.toLowerCase()) : undefined;
  return row !== undefined && row.generation === lease.leaseGeneration && isForeign(row, lease) ? 'not-owner' : 'stale';
}

/** SET items that end an abort request with the lease: every settlement writes them (CHECK jobs_abort_only_while_claimed). */
export const CLEAR_ABORT = 'abort_requested_at = NULL, abort_requested_by = NULL, abort_stop_schedule = false';

/** Upper bound on a stored error message, so a chatty handler cannot bloat the runs table. */
export const MAX_ERROR_CHARS = 4096;


export function truncateError(error: string | null | undefined): string | null {
  if (error === undefined || error === null) return null;
  return error.length > MAX_ERROR_CHARS ? `${error.slice(0, MAX_ERROR_CHARS)}…` : error;
}

/**
 * A checked-out client whose connection dies between two queries (the database
 * crashed while we computed a settlement) emits 'error' with no listener, which
 * would crash the process; the next query reports the failure instead.
 */
const ignoreIdleError = (): void => undefined;

export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  client.on('error', ignoreIdleError);
  try {
    await client.query('BEGIN');
    const result = await work(client);
    await client.query('COMMIT');
    return result;
  } catch (error: unknown) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.removeListener('error', ignoreIdleError);
    client.release();
  }
}
