/**
 * Every statement that claims, renews, completes, releases, cancels, pauses,
 * resumes, triggers or reaps a job. Nothing else in Kairos writes `jobs.state`
 * after creation. The protocol is described in ../README.md ("Lease protocol");
 * the short version:
 *
 * - A lease is identified by (job id, lease_generation). The database row is the
 *   only authority; the generation is bumped by every claim and never reused, so
 *   it doubles as the fencing token handed to handlers.
 * - Every write after a claim is conditioned on `state = 'CLAIMED' AND
 *   lease_generation = $gen`. Zero rows is an outcome (`stale`/`lost`), never an
 *   error and never a partial write.
 * - The database clock decides. Each function takes an optional `now` that
 *   replaces `now()` in SQL, so tests can pin time; production passes nothing.
 * - Batches are the rule: claim, renew, complete and release take many leases
 *   per call and commit once, so durable commits per job stay well below one.
 */
import type { Pool, PoolClient } from 'pg';
import { MISFIRE_POLICIES, planAfterOccurrence, type MisfirePolicy } from '@kairos/schedule';
import { wrapStoreError } from './pg-errors';
import { settle, type AttemptOutcome, type RetryPolicy, type Settlement } from './settle';

/** A lease as the agent names it: job id plus the generation it was claimed with. */
export interface LeaseRef {
  jobId: string;
  leaseGeneration: number;
}

/**
 * A lease named by the agent that says it holds it: renewals, outcomes and
 * releases are fenced on the holder too, not only on the generation, so one
 * agent cannot renew, settle or give back another agent's lease (issue: a
 * rogue agent with a valid token completing someone else's job).
 */
export interface HeldLeaseRef extends LeaseRef {
  /** The agent id the lease was granted to (lease_owner). */
  owner: string;
  /** The agent token it was granted to (lease_token); null for a coordinator running with --insecure. */
  tokenId: string | null;
}

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
  leaseMs: number;
  /**
   * A recurring job with misfire policy `skip` that is later than this is not
   * claimed: `skipMisfired` moves it to its next future occurrence instead, so
   * `skip` never runs an occurrence late. Default 60 s.
   */
  misfireThresholdMs?: number;
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
}

/** `not-owner`: the lease exists but was granted to another agent or token (refused, changes nothing). */
export type LeaseLostReason = 'stale-generation' | 'expired' | 'not-found' | 'not-owner';

export type RenewResult =
  | { kind: 'renewed'; jobId: string; leaseGeneration: number; remainingMs: number }
  | { kind: 'lost'; jobId: string; leaseGeneration: number; reason: LeaseLostReason };

export interface CompletionReport extends HeldLeaseRef {
  outcome: Exclude<AttemptOutcome, 'LEASE_EXPIRED'>;
  error?: string | null;
}

export type CompleteResult =
  | { kind: 'recorded'; jobId: string; leaseGeneration: number; state: Settlement['state']; nextRunAt: Date | null }
  | { kind: 'stale' | 'not-owner'; jobId: string; leaseGeneration: number };

export type ReleaseResult = { kind: 'released' | 'stale' | 'not-owner'; jobId: string; leaseGeneration: number };

export type CancelResult =
  | { kind: 'cancelled' }
  | { kind: 'already-cancelled' }
  | { kind: 'claimed'; leaseGeneration: number; leaseOwner: string | null; leaseUntil: Date | null; runId: number | null }
  | { kind: 'finished'; state: 'COMPLETED' | 'DEAD' }
  | { kind: 'not-found' };

/** pause / resume / trigger: done, or why not. */
export type ControlResult =
  | { kind: 'done'; jobId: string }
  | { kind: 'conflict'; state: string }
  | { kind: 'not-found' };

export interface ReapResult {
  /** Leases found expired and settled (runs marked LEASE_EXPIRED). */
  expired: Array<{ jobId: string; leaseGeneration: number; leaseOwner: string | null; state: Settlement['state'] }>;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isJobId(value: string): boolean {
  return UUID_RE.test(value);
}

export interface LeaseStatements {
  claimDue(request: ClaimRequest): Promise<ClaimedJob[]>;
  renew(leases: readonly HeldLeaseRef[], leaseMs: number, now?: Date): Promise<RenewResult[]>;
  complete(reports: readonly CompletionReport[], now?: Date): Promise<CompleteResult[]>;
  release(leases: readonly HeldLeaseRef[], reason: string, now?: Date): Promise<ReleaseResult[]>;
  reapExpired(options?: { limit?: number; now?: Date }): Promise<ReapResult>;
  skipMisfired(options?: { thresholdMs?: number; limit?: number; now?: Date }): Promise<{ skipped: number }>;
  cancel(namespace: string, jobId: string, now?: Date): Promise<CancelResult>;
  pause(namespace: string, jobId: string, now?: Date): Promise<ControlResult>;
  resume(namespace: string, jobId: string, now?: Date): Promise<ControlResult>;
  trigger(namespace: string, jobId: string, now?: Date): Promise<ControlResult>;
}

export function leaseStatements(pool: Pool, retry: RetryPolicy = {}): LeaseStatements {
  return {
    claimDue: (request) => guard('claimDue', () => claimDue(pool, request)),
    renew: (leases, leaseMs, now) => guard('renew', () => renew(pool, leases, leaseMs, now)),
    complete: (reports, now) => guard('complete', () => complete(pool, reports, retry, now)),
    release: (leases, reason, now) => guard('release', () => release(pool, leases, reason, now)),
    reapExpired: (options) => guard('reapExpired', () => reapExpired(pool, retry, options)),
    skipMisfired: (options) => guard('skipMisfired', () => skipMisfired(pool, options)),
    cancel: (namespace, jobId, now) => guard('cancel', () => cancel(pool, namespace, jobId, now)),
    pause: (namespace, jobId, now) => guard('pause', () => pause(pool, namespace, jobId, now)),
    resume: (namespace, jobId, now) => guard('resume', () => resume(pool, namespace, jobId, now)),
    trigger: (namespace, jobId, now) => guard('trigger', () => trigger(pool, namespace, jobId, now)),
  };
}

async function guard<T>(context: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error: unknown) {
    throw wrapStoreError(`lease.${context}`, error);
  }
}

const NOW = (param: number) => `coalesce($${param}::timestamptz, now())`;
/**
 * The wall clock when the expression is evaluated, not when the transaction
 * began: used for a claimed run's `started_at`, read after the row lock, so it
 * can never precede the `finished_at` of the run that freed the job (with
 * `now()` it could, by a millisecond: chaos finding 5). Never in a WHERE
 * clause: it is volatile, so no index could serve it.
 */
const CLOCK = (param: number) => `coalesce($${param}::timestamptz, clock_timestamp())`;

/**
 * A timestamptz as whole epoch milliseconds in a float8, which pg hands to JS
 * as a number (no Date parsing); whole, so protobuf Timestamps built from it
 * get integral nanos. Truncates like a JS Date of the same instant.
 */
const EPOCH_MS = (expression: string) => `floor(extract(epoch FROM ${expression}) * 1000)::float8`;

/**
 * Row locks for a batch of held leases, taken in job-id order. A row matches
 * only with its generation AND its holder (agent id and token), so a lease
 * named by anyone but its holder locks nothing and changes nothing. Every statement that
 * locks several jobs does so in id order (the locked path of `complete` too),
 * so two batches sharing leases (a heartbeat's renewal and an outcome flush)
 * cannot deadlock; an `UPDATE … FROM unnest(…)` alone locks in whatever order
 * its plan visits rows (found by tools/chaos: "deadlock detected" on renew).
 */
function lockInIdOrder(firstParam: number, extraCondition = ''): string {
  const [ids, generations, owners, tokens] = [0, 1, 2, 3].map((offset) => `$${firstParam + offset}`);
  return `SELECT j.id FROM jobs j
      JOIN unnest(${ids}::uuid[], ${generations}::bigint[], ${owners}::text[], ${tokens}::uuid[]) AS r(id, generation, owner, token)
      ON j.id = r.id AND j.lease_generation = r.generation AND j.lease_owner = r.owner
        AND j.lease_token IS NOT DISTINCT FROM r.token
    WHERE j.state = 'CLAIMED' ${extraCondition}
    ORDER BY j.id
    FOR UPDATE OF j`;
}

// ---------------------------------------------------------------------------
// claim

/**
 * One statement: lock the oldest due rows this claimer can run (skipping rows
 * another claimer or a cancel holds), mark them CLAIMED with a new generation,
 * and insert their RUNNING run rows. Never read-then-write: two claimers can
 * never both see a row as DUE, because the row lock is taken by the same
 * statement that changes the state, and SKIP LOCKED makes the loser move on to
 * the next row instead of waiting. Order inside a spike is therefore not strict.
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
  WHERE state = 'DUE' AND next_run_at <= (SELECT ${NOW(1)}) AND task = ANY($2::text[]) AND namespace = $7
    AND NOT (misfire_policy = 'skip' AND schedule IS NOT NULL
             AND next_run_at < ${NOW(1)} - make_interval(secs => $6::double precision / 1000))
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
    updated_at = ${NOW(1)}
  FROM due WHERE j.id = due.id
  RETURNING j.id, j.namespace, j.task, j.payload::text AS payload_json, j.attempt, j.max_attempts, j.lease_generation,
            j.lease_until, j.timeout_ms, j.occurrence_at, j.next_run_at
), inserted AS (
  INSERT INTO runs (job_id, attempt, lease_generation, scheduled_for, worker_id, started_at, outcome)
  SELECT id, attempt, lease_generation, occurrence_at, $4, ${CLOCK(1)}, 'RUNNING' FROM claimed
  RETURNING id, job_id
)
SELECT c.id, c.namespace, c.task, c.payload_json, c.attempt, c.max_attempts, c.lease_generation, c.timeout_ms,
  i.id AS run_id,
  ${EPOCH_MS('c.lease_until')} AS lease_until_ms,
  ${EPOCH_MS('c.occurrence_at')} AS scheduled_for_ms,
  ${EPOCH_MS('c.next_run_at')} AS due_at_ms,
  ${EPOCH_MS(NOW(1))} AS claimed_at_ms
FROM claimed c JOIN inserted i ON i.job_id = c.id
ORDER BY c.next_run_at`;

async function claimDue(pool: Pool, request: ClaimRequest): Promise<ClaimedJob[]> {
  if (request.limit <= 0 || request.tasks.length === 0) return [];
  const { rows } = await pool.query(CLAIM_SQL, [
    request.now ?? null,
    request.tasks,
    request.limit,
    request.owner,
    request.leaseMs,
    request.misfireThresholdMs ?? DEFAULT_MISFIRE_THRESHOLD_MS,
    request.namespace,
    request.tokenId,
  ]);
  return rows.map((row) => ({
    jobId: row.id,
    runId: Number(row.run_id),
    namespace: row.namespace,
    task: row.task,
    payloadJson: row.payload_json,
    attempt: row.attempt,
    maxAttempts: row.max_attempts,
    leaseGeneration: Number(row.lease_generation),
    leaseUntilMs: row.lease_until_ms,
    leaseRemainingMs: request.leaseMs,
    timeoutMs: row.timeout_ms,
    scheduledForMs: row.scheduled_for_ms,
    dueAtMs: row.due_at_ms,
    claimedAtMs: row.claimed_at_ms,
  }));
}

// ---------------------------------------------------------------------------
// renew

/**
 * One UPDATE for a whole heartbeat. A lease is renewed only if the row is still
 * CLAIMED with the same generation: a lease that expired but was not yet reaped
 * is renewed too, which is safe because nobody else can hold it until the
 * generation moves. The remaining time is computed by the database and returned
 * as a duration, so the agent never compares its clock with ours.
 */
const RENEW_SQL = `
WITH locked AS (${lockInIdOrder(3)})
UPDATE jobs j SET
  lease_until = ${NOW(1)} + make_interval(secs => $2::double precision / 1000),
  updated_at = ${NOW(1)}
FROM locked
WHERE j.id = locked.id
RETURNING j.id, j.lease_generation,
  floor(extract(epoch FROM (j.lease_until - ${NOW(1)})) * 1000)::bigint AS remaining_ms`;

async function renew(pool: Pool, leases: readonly HeldLeaseRef[], leaseMs: number, now?: Date): Promise<RenewResult[]> {
  const valid = leases.filter(isWellFormed);
  const renewed = new Map<string, number>();
  if (valid.length > 0) {
    const { rows } = await pool.query(RENEW_SQL, [now ?? null, leaseMs, ...holderArrays(valid)]);
    for (const row of rows) renewed.set(leaseKey(row.id, Number(row.lease_generation)), Number(row.remaining_ms));
  }
  const lostIds = leases.filter((lease) => !renewed.has(leaseKey(lease.jobId, lease.leaseGeneration)));
  const current = await currentHolders(pool, lostIds);
  return leases.map((lease): RenewResult => {
    const { jobId, leaseGeneration } = lease;
    const remainingMs = renewed.get(leaseKey(jobId, leaseGeneration));
    if (remainingMs !== undefined) return { kind: 'renewed', jobId, leaseGeneration, remainingMs };
    const row = isWellFormed(lease) ? current.get(jobId.toLowerCase()) : undefined;
    const reason: LeaseLostReason =
      row === undefined
        ? 'not-found'
        : row.generation !== leaseGeneration
          ? 'stale-generation'
          : isForeign(row, lease)
            ? 'not-owner'
            : 'expired';
    return { kind: 'lost', jobId, leaseGeneration, reason };
  });
}

/**
 * A lease reference the statements can bind: a uuid job id and a generation
 * PostgreSQL's bigint can hold. Anything else (a generation of 2^63 from a
 * broken agent) is answered on its own as not found and never reaches a batch
 * statement, where one bad value would fail everybody's renewals.
 */
function isWellFormed(lease: LeaseRef): boolean {
  return isJobId(lease.jobId) && Number.isSafeInteger(lease.leaseGeneration) && lease.leaseGeneration >= 1;
}

function holderArrays(leases: readonly HeldLeaseRef[]): [string[], number[], string[], Array<string | null>] {
  return [
    leases.map((lease) => lease.jobId),
    leases.map((lease) => lease.leaseGeneration),
    leases.map((lease) => lease.owner),
    leases.map((lease) => (lease.tokenId !== null && isJobId(lease.tokenId) ? lease.tokenId : null)),
  ];
}

interface CurrentHolder {
  generation: number;
  state: string;
  owner: string | null;
  tokenId: string | null;
}

function isForeign(row: CurrentHolder, lease: HeldLeaseRef): boolean {
  return row.state === 'CLAIMED' && (row.owner !== lease.owner || row.tokenId !== lease.tokenId);
}

/** The current generation and holder of each named job (read after a refusal, to say why). */
async function currentHolders(pool: Pool, leases: readonly LeaseRef[]): Promise<Map<string, CurrentHolder>> {
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
function refusal(lease: HeldLeaseRef, current: Map<string, CurrentHolder>): 'stale' | 'not-owner' {
  const row = isWellFormed(lease) ? current.get(lease.jobId.toLowerCase()) : undefined;
  return row !== undefined && row.generation === lease.leaseGeneration && isForeign(row, lease) ? 'not-owner' : 'stale';
}

// ---------------------------------------------------------------------------
// complete and reap share the settlement path

interface LockedJob {
  id: string;
  leaseGeneration: number;
  leaseOwner: string | null;
  schedule: string | null;
  timezone: string;
  occurrenceAt: Date;
  attempt: number;
  maxAttempts: number;
  misfirePolicy: MisfirePolicy;
}

const LOCKED_COLUMNS = `j.id, j.lease_generation, j.lease_owner, j.schedule, j.timezone, j.occurrence_at,
  j.attempt, j.max_attempts, j.misfire_policy`;

function toLockedJob(row: Record<string, unknown>): LockedJob {
  const policy = row.misfire_policy as MisfirePolicy;
  if (!MISFIRE_POLICIES.includes(policy)) throw new Error(`unknown misfire policy ${String(policy)}`);
  return {
    id: row.id as string,
    leaseGeneration: Number(row.lease_generation),
    leaseOwner: (row.lease_owner as string | null) ?? null,
    schedule: (row.schedule as string | null) ?? null,
    timezone: row.timezone as string,
    occurrenceAt: row.occurrence_at as Date,
    attempt: row.attempt as number,
    maxAttempts: row.max_attempts as number,
    misfirePolicy: policy,
  };
}

interface Ending {
  job: LockedJob;
  outcome: AttemptOutcome;
  error: string | null;
}

/** Upper bound on a stored error message, so a chatty handler cannot bloat the runs table. */
export const MAX_ERROR_CHARS = 4096;

async function complete(
  pool: Pool,
  reports: readonly CompletionReport[],
  retry: RetryPolicy,
  now?: Date,
): Promise<CompleteResult[]> {
  if (reports.length === 0) return [];
  // Duplicates within one batch: the first report wins, the others are stale.
  const firstIndex = new Map<string, number>();
  reports.forEach((report, index) => {
    const key = leaseKey(report.jobId, report.leaseGeneration);
    if (isWellFormed(report) && !firstIndex.has(key)) firstIndex.set(key, index);
  });
  const firstReports = [...firstIndex.values()].map((index) => reports[index]!);
  // Only the state and next run time are reported back (CompleteResult).
  const settled = new Map<string, Pick<Settlement, 'state' | 'nextRunAt'>>();
  // Fast path, one statement: successful one-off runs need no schedule arithmetic.
  const simple = firstReports.filter((report) => report.outcome === 'SUCCEEDED');
  if (simple.length > 0) {
    const { rows } = await pool.query(COMPLETE_SIMPLE_SQL, [now ?? null, ...holderArrays(simple)]);
    for (const row of rows) {
      settled.set(leaseKey(row.id, Number(row.lease_generation)), { state: 'COMPLETED', nextRunAt: null });
    }
  }
  // Everything else (failures, recurring jobs, and reports the fast path did not match,
  // which are either recurring or stale) takes the locked path below.
  const candidates = firstReports.filter((r) => !settled.has(leaseKey(r.jobId, r.leaseGeneration)));
  if (candidates.length > 0) {
    await inTransaction(pool, async (client) => {
      const { rows } = await client.query(
        `WITH locked AS (${lockInIdOrder(2)})
         SELECT ${LOCKED_COLUMNS}, ${NOW(1)} AS now FROM jobs j JOIN locked ON locked.id = j.id`,
        [now ?? null, ...holderArrays(candidates)],
      );
      if (rows.length === 0) return;
      const dbNow = rows[0]!.now as Date;
      const byLease = new Map(candidates.map((report) => [leaseKey(report.jobId, report.leaseGeneration), report]));
      const endings = rows.map((row): Ending => {
        const job = toLockedJob(row);
        const report = byLease.get(leaseKey(job.id, job.leaseGeneration))!;
        return { job, outcome: report.outcome, error: truncateError(report.error) };
      });
      const results = await applyEndings(client, endings, dbNow, retry);
      for (const { job } of endings) settled.set(leaseKey(job.id, job.leaseGeneration), results.get(job.id)!);
    });
  }
  const refused = reports.filter((report) => !settled.has(leaseKey(report.jobId, report.leaseGeneration)));
  const current = await currentHolders(pool, refused);
  return reports.map((report, index): CompleteResult => {
    const key = leaseKey(report.jobId, report.leaseGeneration);
    const settlement = firstIndex.get(key) === index ? settled.get(key) : undefined;
    if (settlement === undefined) {
      const kind = settled.has(key) ? 'stale' : refusal(report, current);
      return { kind, jobId: report.jobId, leaseGeneration: report.leaseGeneration };
    }
    return {
      kind: 'recorded',
      jobId: report.jobId,
      leaseGeneration: report.leaseGeneration,
      state: settlement.state,
      nextRunAt: settlement.nextRunAt,
    };
  });
}

/**
 * Completion of successful one-off runs in one statement (one round trip, one
 * commit for the whole batch): fenced like every other write, on CLAIMED and
 * the generation. Recurring jobs and failures need schedule arithmetic and go
 * through `applyEndings`.
 */
const COMPLETE_SIMPLE_SQL = `
WITH locked AS (${lockInIdOrder(2, 'AND j.schedule IS NULL')}), done AS (
  UPDATE jobs j SET state = 'COMPLETED', next_run_at = NULL, lease_until = NULL, lease_owner = NULL, lease_token = NULL,
    updated_at = ${NOW(1)}
  FROM locked
  WHERE j.id = locked.id
  RETURNING j.id, j.lease_generation
), closed AS (
  UPDATE runs r SET outcome = 'SUCCEEDED', finished_at = ${NOW(1)}, error = NULL
  FROM done WHERE r.job_id = done.id AND r.lease_generation = done.lease_generation AND r.outcome = 'RUNNING'
)
SELECT id, lease_generation FROM done`;

/**
 * Leases whose lease_until has passed go back to DUE (or DEAD at the cap, or the
 * next occurrence for a recurring job at the cap); their run is marked
 * LEASE_EXPIRED. SKIP LOCKED lets reapers on several coordinators share the work,
 * and lets a concurrent completion of the same row win: it holds the lock, and
 * once it commits the row is no longer CLAIMED with that generation.
 */
async function reapExpired(
  pool: Pool,
  retry: RetryPolicy,
  options: { limit?: number; now?: Date } = {},
): Promise<ReapResult> {
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `SELECT ${LOCKED_COLUMNS}, ${NOW(1)} AS now
       FROM jobs j
       WHERE j.state = 'CLAIMED' AND j.lease_until < ${NOW(1)}
       ORDER BY j.lease_until
       LIMIT $2
       FOR UPDATE SKIP LOCKED`,
      [options.now ?? null, options.limit ?? 1000],
    );
    if (rows.length === 0) return { expired: [] };
    const dbNow = rows[0]!.now as Date;
    const endings = rows.map(
      (row): Ending => ({ job: toLockedJob(row), outcome: 'LEASE_EXPIRED', error: 'lease expired: the worker stopped renewing' }),
    );
    const settled = await applyEndings(client, endings, dbNow, retry);
    return {
      expired: endings.map(({ job }) => ({
        jobId: job.id,
        leaseGeneration: job.leaseGeneration,
        leaseOwner: job.leaseOwner,
        state: settled.get(job.id)!.state,
      })),
    };
  });
}

/** Upper bound on SKIPPED rows written for one missed stretch; the last row states the full count. */
const SKIPPED_ROWS_LIMIT = 100;

/** Writes the settlement of locked, CLAIMED rows: job row, run row, and SKIPPED rows. Three statements. */
async function applyEndings(
  client: PoolClient,
  endings: readonly Ending[],
  now: Date,
  retry: RetryPolicy,
): Promise<Map<string, Settlement>> {
  const settled = new Map<string, Settlement>();
  for (const ending of endings) settled.set(ending.job.id, settle(ending.job, ending.outcome, now, retry));

  const ids = endings.map((e) => e.job.id);
  const plans = ids.map((id) => settled.get(id)!);
  await client.query(
    `UPDATE jobs j SET
       state = u.state, next_run_at = u.next_run_at, occurrence_at = u.occurrence_at, attempt = u.attempt,
       lease_until = NULL, lease_owner = NULL, lease_token = NULL, updated_at = $6
     FROM unnest($1::uuid[], $2::kairos_job_state[], $3::timestamptz[], $4::timestamptz[], $5::int[])
       AS u(id, state, next_run_at, occurrence_at, attempt)
     WHERE j.id = u.id`,
    [ids, plans.map((p) => p.state), plans.map((p) => p.nextRunAt), plans.map((p) => p.occurrenceAt), plans.map((p) => p.attempt), now],
  );
  await client.query(
    `UPDATE runs r SET outcome = u.outcome, error = u.error, finished_at = $5
     FROM unnest($1::uuid[], $2::bigint[], $3::kairos_run_outcome[], $4::text[]) AS u(job_id, generation, outcome, error)
     WHERE r.job_id = u.job_id AND r.lease_generation = u.generation AND r.outcome = 'RUNNING'`,
    [ids, endings.map((e) => e.job.leaseGeneration), endings.map((e) => e.outcome), endings.map((e) => e.error), now],
  );

  await insertSkipped(
    client,
    endings.map(({ job }) => ({ job, skipped: settled.get(job.id)!.skipped, skippedCount: settled.get(job.id)!.skippedCount })),
    now,
  );
  return settled;
}

/** Records SKIPPED runs: at most SKIPPED_ROWS_LIMIT per job; the last names how many more were missed. */
async function insertSkipped(
  client: PoolClient,
  items: ReadonlyArray<{ job: LockedJob; skipped: readonly Date[]; skippedCount: number }>,
  now: Date,
): Promise<void> {
  const jobIds: string[] = [];
  const scheduledFor: Date[] = [];
  const notes: string[] = [];
  for (const { job, skipped, skippedCount } of items) {
    const listed = skipped.slice(0, SKIPPED_ROWS_LIMIT);
    listed.forEach((occurrence, index) => {
      jobIds.push(job.id);
      scheduledFor.push(occurrence);
      const unlisted = skippedCount - listed.length;
      notes.push(
        `occurrence missed (misfire policy ${job.misfirePolicy})` +
          (index === listed.length - 1 && unlisted > 0 ? `; ${unlisted} later missed occurrences not listed` : ''),
      );
    });
  }
  if (jobIds.length === 0) return;
  await client.query(
    `INSERT INTO runs (job_id, attempt, lease_generation, scheduled_for, outcome, finished_at, error)
     SELECT u.job_id, 0, NULL, u.scheduled_for, 'SKIPPED', $4, u.note
     FROM unnest($1::uuid[], $2::timestamptz[], $3::text[]) AS u(job_id, scheduled_for, note)`,
    [jobIds, scheduledFor, notes, now],
  );
}

/**
 * `skip` means an occurrence never runs late. A recurring `skip` job whose
 * pending occurrence is later than the threshold (the claim leaves such rows
 * alone) is moved to its next future occurrence; the occurrence it was waiting
 * to serve and every one after it up to now are recorded as SKIPPED. Runs in the
 * reaper's pass on every coordinator; SKIP LOCKED shares the work.
 */
async function skipMisfired(
  pool: Pool,
  options: { thresholdMs?: number; limit?: number; now?: Date } = {},
): Promise<{ skipped: number }> {
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `SELECT ${LOCKED_COLUMNS}, ${NOW(1)} AS now
       FROM jobs j
       WHERE j.state = 'DUE' AND j.misfire_policy = 'skip' AND j.schedule IS NOT NULL
         AND j.next_run_at < ${NOW(1)} - make_interval(secs => $2::double precision / 1000)
       ORDER BY j.next_run_at
       LIMIT $3
       FOR UPDATE SKIP LOCKED`,
      [options.now ?? null, options.thresholdMs ?? DEFAULT_MISFIRE_THRESHOLD_MS, options.limit ?? 1000],
    );
    if (rows.length === 0) return { skipped: 0 };
    const now = rows[0]!.now as Date;
    const items = rows.map((row) => {
      const job = toLockedJob(row);
      const plan = planAfterOccurrence({ expression: job.schedule!, timezone: job.timezone }, job.occurrenceAt, now, 'skip');
      return { job, next: plan.next, skipped: [job.occurrenceAt, ...plan.skipped], skippedCount: plan.skippedCount + 1 };
    });
    await client.query(
      `UPDATE jobs j SET next_run_at = u.next, occurrence_at = u.next, attempt = 0, updated_at = $3
       FROM unnest($1::uuid[], $2::timestamptz[]) AS u(id, next) WHERE j.id = u.id`,
      [items.map((i) => i.job.id), items.map((i) => i.next), now],
    );
    await insertSkipped(client, items, now);
    return { skipped: items.length };
  });
}

// ---------------------------------------------------------------------------
// release (an agent drains: give back leases it has not started)

async function release(pool: Pool, leases: readonly HeldLeaseRef[], reason: string, now?: Date): Promise<ReleaseResult[]> {
  const valid = leases.filter(isWellFormed);
  const released = new Set<string>();
  if (valid.length > 0) {
    const { rows } = await pool.query(
      `WITH locked AS (${lockInIdOrder(2)}), released AS (
         UPDATE jobs j SET state = 'DUE', lease_owner = NULL, lease_token = NULL, lease_until = NULL,
           attempt = j.attempt - 1, updated_at = ${NOW(1)}
         FROM locked
         WHERE j.id = locked.id
         RETURNING j.id, j.lease_generation
       ), runs_closed AS (
         UPDATE runs r SET outcome = 'CANCELLED', finished_at = ${NOW(1)}, error = $6
         FROM released WHERE r.job_id = released.id AND r.lease_generation = released.lease_generation
           AND r.outcome = 'RUNNING'
       )
       SELECT id, lease_generation FROM released`,
      [now ?? null, ...holderArrays(valid), truncateError(`released before start: ${reason}`)],
    );
    for (const row of rows) released.add(leaseKey(row.id, Number(row.lease_generation)));
  }
  const current = await currentHolders(
    pool,
    leases.filter((lease) => !released.has(leaseKey(lease.jobId, lease.leaseGeneration))),
  );
  return leases.map(({ jobId, leaseGeneration, ...holder }) => ({
    kind: released.has(leaseKey(jobId, leaseGeneration))
      ? 'released'
      : refusal({ jobId, leaseGeneration, ...holder }, current),
    jobId,
    leaseGeneration,
  }));
}

// ---------------------------------------------------------------------------
// cancel, pause, resume, trigger (client operations on one job)

/**
 * Cancel wins only over a job nobody holds. The UPDATE takes the row lock; if a
 * claim holds it, the UPDATE waits for the claim to commit, re-reads the row,
 * finds it CLAIMED and matches nothing. A claim that comes second skips the
 * locked row (SKIP LOCKED) and then finds it CANCELLED. So exactly one of them
 * wins, and a `claimed` answer means the job is running or about to.
 */
async function cancel(pool: Pool, namespace: string, jobId: string, now?: Date): Promise<CancelResult> {
  if (!isJobId(jobId)) return { kind: 'not-found' };
  const updated = await pool.query(
    `UPDATE jobs SET state = 'CANCELLED', next_run_at = NULL, updated_at = ${NOW(1)}
     WHERE id = $2 AND namespace = $3 AND state IN ('DUE', 'PAUSED')
     RETURNING id`,
    [now ?? null, jobId, namespace],
  );
  if (updated.rowCount === 1) return { kind: 'cancelled' };
  const { rows } = await pool.query(
    `SELECT j.state, j.lease_generation, j.lease_owner, j.lease_until, r.id AS run_id
     FROM jobs j LEFT JOIN runs r ON r.job_id = j.id AND r.lease_generation = j.lease_generation
     WHERE j.id = $1 AND j.namespace = $2`,
    [jobId, namespace],
  );
  const row = rows[0];
  if (row === undefined) return { kind: 'not-found' };
  switch (row.state as string) {
    case 'CANCELLED':
      return { kind: 'already-cancelled' };
    case 'COMPLETED':
    case 'DEAD':
      return { kind: 'finished', state: row.state };
    case 'CLAIMED':
      return {
        kind: 'claimed',
        leaseGeneration: Number(row.lease_generation),
        leaseOwner: row.lease_owner,
        leaseUntil: row.lease_until,
        runId: row.run_id === null ? null : Number(row.run_id),
      };
    default:
      // DUE or PAUSED again: another transaction moved it between our two reads
      // (e.g. a claim that just completed). Try again.
      return cancel(pool, namespace, jobId, now);
  }
}

async function controlUpdate(
  pool: Pool,
  namespace: string,
  jobId: string,
  sql: string,
  now: Date | undefined,
  /** States in which the call is already satisfied: answered `done` without a write. */
  noopStates: readonly string[] = [],
): Promise<ControlResult> {
  if (!isJobId(jobId)) return { kind: 'not-found' };
  const updated = await pool.query(sql, [now ?? null, jobId, namespace]);
  if (updated.rowCount === 1) return { kind: 'done', jobId };
  const { rows } = await pool.query('SELECT state FROM jobs WHERE id = $1 AND namespace = $2', [jobId, namespace]);
  if (rows[0] === undefined) return { kind: 'not-found' };
  return noopStates.includes(rows[0].state) ? { kind: 'done', jobId } : { kind: 'conflict', state: rows[0].state };
}

/** DUE -> PAUSED (PAUSED: no-op). A CLAIMED job is running: pause it once the run has ended. */
function pause(pool: Pool, namespace: string, jobId: string, now?: Date): Promise<ControlResult> {
  return controlUpdate(
    pool,
    namespace,
    jobId,
    `UPDATE jobs SET state = 'PAUSED', updated_at = ${NOW(1)}
     WHERE id = $2 AND namespace = $3 AND state = 'DUE'`,
    now,
    ['PAUSED'],
  );
}

/** PAUSED -> DUE (DUE, CLAIMED: no-op); occurrences missed while paused follow the misfire policy. */
function resume(pool: Pool, namespace: string, jobId: string, now?: Date): Promise<ControlResult> {
  return controlUpdate(
    pool,
    namespace,
    jobId,
    `UPDATE jobs SET state = 'DUE', updated_at = ${NOW(1)}
     WHERE id = $2 AND namespace = $3 AND state = 'PAUSED'`,
    now,
    ['DUE', 'CLAIMED'],
  );
}

/**
 * Run now. A DUE job waiting for a future occurrence gets an extra occurrence
 * at `now` (the schedule then carries on from it, so nothing scheduled is lost);
 * a DEAD job is revived with a fresh attempt budget.
 */
function trigger(pool: Pool, namespace: string, jobId: string, now?: Date): Promise<ControlResult> {
  return controlUpdate(
    pool,
    namespace,
    jobId,
    `UPDATE jobs SET
       state = 'DUE',
       attempt = CASE WHEN state = 'DEAD' THEN 0 ELSE attempt END,
       occurrence_at = CASE WHEN state = 'DUE' AND occurrence_at > ${NOW(1)} THEN ${NOW(1)} ELSE occurrence_at END,
       next_run_at = LEAST(coalesce(next_run_at, ${NOW(1)}), ${NOW(1)}),
       updated_at = ${NOW(1)}
     WHERE id = $2 AND namespace = $3 AND state IN ('DUE', 'DEAD')`,
    now,
  );
}

// ---------------------------------------------------------------------------

function leaseKey(jobId: string, generation: number): string {
  return `${jobId.toLowerCase()}#${generation}`;
}

function truncateError(error: string | null | undefined): string | null {
  if (error === undefined || error === null) return null;
  return error.length > MAX_ERROR_CHARS ? `${error.slice(0, MAX_ERROR_CHARS)}…` : error;
}

/**
 * A checked-out client whose connection dies between two queries (the database
 * crashed while we computed a settlement) emits 'error' with no listener, which
 * would crash the process; the next query reports the failure instead.
 */
const ignoreIdleError = (): void => undefined;

async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
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
