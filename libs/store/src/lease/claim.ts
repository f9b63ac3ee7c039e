/**
 * The claim: one statement that locks due rows and marks them CLAIMED under a
 * new generation for one holder, each with its run (an id reserved from the
 * ended_runs sequence and a start instant; the run's row is written when it
 * ends: docs/decisions/0027).
 */
import type { Pool } from 'pg';
import { CLOCK, EPOCH_MS, NOW } from './sql';

export interface ClaimRequest {
  /** Who holds the leases (the agent id); recorded as lease_owner and runs.worker_id. */
  owner: string;
  /** The agent's token (recorded as lease_token); null when the coordinator runs with --insecure. */
  tokenId: string | null;
  /** Only jobs of this namespace (the agent token's). */
  namespace: string;
  /** Task names the claimer can run; only these are claimed. */
  tasks: readonly string[];
  /** At most this many (the claimer's free slots). */
  limit: number;
  /** Whole milliseconds. */
  leaseMs: number;
  /**
   * A recurring job with misfire policy `skip` that is later than this is not
   * claimed: `skipMisfired` moves it to its next future occurrence instead, so
   * `skip` never runs an occurrence late. Default 60 s. (A run a policy planned
   * late on purpose, with a `next_reason`, is exempt.) Likewise a `catch-up`
   * job waiting on an occurrence older than its window is left for
   * `skipMisfired` to move into the window.
   */
  misfireThresholdMs?: number;
  /**
   * Pre-dispatch: also claim jobs due within this many milliseconds (database
   * clock); they are handed out with their due instant and started then. 0 or
   * unset: only jobs due now. Due jobs always come first (the order is
   * next_run_at).
   */
  horizonMs?: number;
  /**
   * Only jobs not yet due (due within `horizonMs`): the claim of an agent's
   * start queue, which holds pre-dispatched leases beyond its free slots. Due
   * jobs are never claimed this way, so a backlog only ever goes to free slots.
   */
  futureOnly?: boolean;
  now?: Date;
}

export const DEFAULT_MISFIRE_THRESHOLD_MS = 60_000;

export interface ClaimedJob {
  jobId: string;
  runId: number;
  namespace: string;
  task: string;
  /**
   * The payload as JSON text (jsonb's output form, an object): the coordinator
   * forwards it to the agent as text and never parses it.
   */
  payloadJson: string;
  attempt: number;
  maxAttempts: number;
  /** The fencing token. */
  leaseGeneration: number;
  /**
   * The claim's instants are epoch milliseconds (whole, database clock), not
   * Dates: the coordinator only forwards them or subtracts them, and parsing
   * four timestamptz texts per claimed row showed in its profiles.
   */
  leaseUntilMs: number;
  /** Lease length granted, measured by the database clock. */
  leaseRemainingMs: number;
  timeoutMs: number | null;
  /** The schedule occurrence this run serves, epoch ms. */
  scheduledForMs: number;
  /** When it became claimable (the occurrence, or a retry time), epoch ms. */
  dueAtMs: number;
  claimedAtMs: number;
  /** W3C traceparent of the job's creation, for the claim's span (null: none). */
  traceParent: string | null;
}

/**
 * One statement: lock the oldest due rows this claimer can run (skipping rows
 * another claimer or a cancel holds), mark them CLAIMED with a new generation,
 * and give each its run on the job row (`run_id` reserved from the
 * ended_runs sequence, `run_started_at`; the `runs` view lists it RUNNING
 * until its ending writes its row). Never read-then-write: two claimers can
 * never both see a row as DUE, because the row lock is taken by the same
 * statement that changes the state, and SKIP LOCKED makes the loser move on to
 * the next row instead of waiting. Order inside a spike is therefore not strict.
 *
 * Pre-dispatch (`horizonMs`): rows due within the horizon are claimed too, due
 * ones first; a run's start is its due instant when that is later than
 * the claim (the agent starts it then). `futureOnly` ($10) starts the index
 * range after the present instead: only rows not yet due. Rows a withdrawal holds for a user's
 * change (`held_until`, lease/withdraw.ts) are skipped until the hold ends.
 *
 * Planner note: the `due` CTE must read the partial index jobs_due_next_run_at_idx
 * in order from its head and stop after LIMIT rows; the task and misfire
 * filters are applied to the rows read. The upper bound is a scalar subquery
 * (an InitPlan) on purpose: its value is unknown when the plan is made, so the
 * planner assumes a third of the DUE rows qualify and always prefers the
 * ordered index scan under LIMIT. With the bound visible, a spike that came due
 * after the last ANALYZE is estimated at a handful of rows, and the planner
 * picked a bitmap scan that reads and sorts EVERY due row (10,000 due among
 * 1,000,000 future: 3-12 ms against 0.3-2 ms; claim-scale.pg.test.ts asserts
 * the plan shape).
 */
export const CLAIM_SQL = `
WITH due AS MATERIALIZED (
  SELECT id FROM jobs
  WHERE state = 'DUE' AND next_run_at <= (SELECT ${NOW(1)} + make_interval(secs => $9::double precision / 1000))
    AND next_run_at > (SELECT CASE WHEN $10::boolean THEN ${NOW(1)} ELSE '-infinity'::timestamptz END)
    AND task = ANY($2::text[]) AND namespace = $7
    AND NOT (misfire_policy = 'skip' AND schedule IS NOT NULL AND next_reason IS NULL
             AND next_run_at < ${NOW(1)} - make_interval(secs => $6::double precision / 1000))
    AND NOT (misfire_policy = 'catch-up' AND catchup_window_ms IS NOT NULL AND attempt = 0 AND next_reason IS NULL
             AND backfill_resume_at IS NULL
             AND occurrence_at < ${NOW(1)} - make_interval(secs => catchup_window_ms::double precision / 1000))
    AND (held_until IS NULL OR held_until <= ${NOW(1)})
  ORDER BY next_run_at
  LIMIT $3
  FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE jobs j SET
    state = 'CLAIMED',
    lease_owner = $4,
    lease_token = $8::uuid,
    lease_until = ${NOW(1)} + make_interval(secs => $5::double precision / 1000),
    lease_generation = j.lease_generation + 1,
    attempt = j.attempt + 1,
    updated_at = ${NOW(1)},
    run_id = nextval('ended_runs_id_seq'),
    run_started_at = greatest(${CLOCK(1)}, j.next_run_at)
  FROM due WHERE j.id = due.id
  RETURNING j.id, j.task, j.payload::text AS payload_json, j.attempt, j.max_attempts, j.lease_generation,
            j.timeout_ms, j.occurrence_at, j.next_run_at, j.trace_parent, j.run_id
)
SELECT c.id, c.task, c.payload_json, c.attempt, c.max_attempts, c.lease_generation, c.timeout_ms,
  c.trace_parent, c.run_id,
  ${EPOCH_MS('c.occurrence_at')} AS scheduled_for_ms,
  ${EPOCH_MS('c.next_run_at')} AS due_at_ms,
  ${EPOCH_MS(NOW(1))} AS claimed_at_ms
FROM claimed c
ORDER BY c.next_run_at`;

/**
 * The claim's output columns, in CLAIM_SQL's order: rows come back as arrays
 * (`rowMode: 'array'`), not objects keyed by column name. A claim returns
 * hundreds of rows, and a driver row object is a copy of a template filled by
 * name, whose property stores and reads the coordinator's profiles showed
 * among its per-job costs (the driver's row code serves every statement, so
 * those sites are megamorphic).
 */
const Col = {
  Id: 0,
  Task: 1,
  PayloadJson: 2,
  Attempt: 3,
  MaxAttempts: 4,
  LeaseGeneration: 5,
  TimeoutMs: 6,
  TraceParent: 7,
  RunId: 8,
  ScheduledForMs: 9,
  DueAtMs: 10,
  ClaimedAtMs: 11,
} as const;

export async function claimDue(pool: Pool, request: ClaimRequest): Promise<ClaimedJob[]> {
  if (request.limit <= 0 || request.tasks.length === 0) return [];
  const { rows } = await pool.query<unknown[]>({ name: 'kairos_claim', text: CLAIM_SQL, rowMode: 'array', values: [
    request.now ?? null,
    request.tasks,
    request.limit,
    request.owner,
    request.leaseMs,
    request.misfireThresholdMs ?? DEFAULT_MISFIRE_THRESHOLD_MS,
    request.namespace,
    request.tokenId,
    Math.max(0, request.horizonMs ?? 0),
    request.futureOnly === true,
  ] });
  const { namespace, leaseMs } = request;
  return rows.map((row): ClaimedJob => {
    const claimedAtMs = row[Col.ClaimedAtMs] as number;
    return {
      jobId: row[Col.Id] as string,
      runId: Number(row[Col.RunId]),
      // The claim takes only rows of this namespace; the row's own is not read back.
      namespace,
      task: row[Col.Task] as string,
      payloadJson: row[Col.PayloadJson] as string,
      attempt: row[Col.Attempt] as number,
      maxAttempts: row[Col.MaxAttempts] as number,
      leaseGeneration: Number(row[Col.LeaseGeneration]),
      // lease_until is the claim's instant plus leaseMs (whole milliseconds, so exact): not read back either.
      leaseUntilMs: claimedAtMs + leaseMs,
      leaseRemainingMs: leaseMs,
      timeoutMs: row[Col.TimeoutMs] as number | null,
      scheduledForMs: row[Col.ScheduledForMs] as number,
      dueAtMs: row[Col.DueAtMs] as number,
      claimedAtMs,
      traceParent: row[Col.TraceParent] as string | null,
    };
  });
}
