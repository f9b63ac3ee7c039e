/**
 * Ending a lease with an outcome: a reported completion (fenced on generation
 * and holder) or an expiry found by the reaper, and the occurrences a `skip`
 * job misses. All go through `applyEndings`, which writes the job row, the run
 * row and any SKIPPED rows that `settle` (../settle.ts) planned.
 */
import type { Pool, PoolClient } from 'pg';
import {
  isOverlapPolicy,
  MISFIRE_POLICIES,
  nextOccurrence,
  planAfterOccurrence,
  planNextRun,
  type MisfirePolicy,
  type OverlapPolicy,
  type SkippedStretch,
} from '@kairos/schedule';
import { settle, startOf, type AttemptOutcome, type RetryPolicy, type Settlement, type SettlingJob } from '../settle';
import { heldKeyOf, heldLeaseKey, isWellFormed, type HeldLeaseRef } from './refs';
import { requestAbort } from './abort';
import { DEFAULT_MISFIRE_THRESHOLD_MS } from './claim';
import { sqlState, SQLSTATE } from '../pg-errors';
import {
  CLEAR_ABORT,
  currentHolders,
  heldLeases,
  holderArrays,
  inTransaction,
  insertEndedRuns,
  jobIdIn,
  lockInIdOrder,
  NOW,
  refusal,
  truncateError,
} from './sql';

export interface CompletionReport extends HeldLeaseRef {
  outcome: Exclude<AttemptOutcome, 'LEASE_EXPIRED'>;
  error?: string | null;
}

export type CompleteResult =
  | {
      kind: 'recorded';
      jobId: string;
      leaseGeneration: number;
      state: Settlement['state'];
      nextRunAt: Date | null;
      /** The outcome recorded on the run (CANCELLED for a run an operator aborted, whatever was reported). */
      runOutcome: Settlement['runOutcome'];
      /** Occurrences this settlement recorded SKIPPED (missed while the run ran, by the job's policies). */
      skipped: number;
    }
  | { kind: 'stale' | 'not-owner'; jobId: string; leaseGeneration: number };

export interface ReapResult {
  /** Leases found expired and settled (runs marked LEASE_EXPIRED). */
  expired: Array<{ jobId: string; leaseGeneration: number; leaseOwner: string | null; state: Settlement['state'] }>;
  /** Occurrences the settlements recorded SKIPPED. */
  skipped: number;
}

/** A CLAIMED (or, for skipMisfired, DUE) job row held FOR UPDATE: what `settle` needs, plus its lease. */
interface LockedJob extends SettlingJob {
  id: string;
  leaseGeneration: number;
  leaseOwner: string | null;
  /** The run a CLAIMED row carries (decision 0027); null on a DUE row (skipMisfired). */
  runId: number | null;
}

const LOCKED_COLUMNS = `j.id, j.lease_generation, j.lease_owner, j.schedule, j.timezone, j.occurrence_at,
  j.attempt, j.max_attempts, j.misfire_policy, j.abort_requested_at, j.abort_requested_by, j.abort_stop_schedule,
  j.retry_initial_ms, j.retry_max_ms, j.retry_multiplier, j.retry_jitter, j.start_jitter_ms, j.pause_on_failure,
  j.rescheduled_at, j.overlap_policy, j.catchup_window_ms, j.run_through, j.decided_through, j.next_reason, j.busy_since,
  j.backfill_resume_at, j.next_run_at AS due_at, j.run_id, j.run_started_at`;

/** The general completion's first step: the named leases' rows, locked, with what their endings need. */
export const LOCK_ENDINGS_SQL = lockInIdOrder(2, '', `${LOCKED_COLUMNS}, j.lease_token, ${NOW(1)} AS now`);

function toLockedJob(row: Record<string, unknown>): LockedJob {
  const policy = row.misfire_policy as MisfirePolicy;
  if (!MISFIRE_POLICIES.includes(policy)) throw new Error(`unknown misfire policy ${String(policy)}`);
  return {
    id: row.id as string,
    leaseGeneration: Number(row.lease_generation),
    leaseOwner: (row.lease_owner as string | null) ?? null,
    runId: row.run_id === null ? null : Number(row.run_id),
    schedule: (row.schedule as string | null) ?? null,
    timezone: row.timezone as string,
    occurrenceAt: row.occurrence_at as Date,
    attempt: row.attempt as number,
    maxAttempts: row.max_attempts as number,
    misfirePolicy: policy,
    abort:
      row.abort_requested_at === null
        ? null
        : { by: (row.abort_requested_by as string | null) ?? null, stopSchedule: row.abort_stop_schedule === true },
    retry: {
      initialMs: (row.retry_initial_ms as number | null) ?? null,
      maxMs: (row.retry_max_ms as number | null) ?? null,
      multiplier: (row.retry_multiplier as number | null) ?? null,
      jitter: (row.retry_jitter as number | null) ?? null,
    },
    startJitterMs: row.start_jitter_ms as number,
    pauseOnFailure: row.pause_on_failure === true,
    rescheduledAt: (row.rescheduled_at as Date | null) ?? null,
    overlapPolicy: overlapPolicyOf(row.overlap_policy),
    catchupWindowMs: row.catchup_window_ms === null ? null : Number(row.catchup_window_ms),
    runThrough: (row.run_through as Date | null) ?? null,
    decidedThrough: (row.decided_through as Date | null) ?? null,
    nextReason: (row.next_reason as string | null) ?? null,
    runStartedAt: (row.run_started_at as Date | null) ?? null,
    busySince: (row.busy_since as Date | null) ?? null,
    backfillResumeAt: (row.backfill_resume_at as Date | null) ?? null,
    dueAt: (row.due_at as Date | null) ?? null,
  };
}

function overlapPolicyOf(value: unknown): OverlapPolicy {
  if (!isOverlapPolicy(value)) throw new Error(`unknown overlap policy ${String(value)}`);
  return value;
}

interface Ending {
  job: LockedJob;
  outcome: AttemptOutcome;
  error: string | null;
}


export async function complete(
  pool: Pool,
  reports: readonly CompletionReport[],
  retry: RetryPolicy,
  now?: Date,
): Promise<CompleteResult[]> {
  if (reports.length === 0) return [];
  // Fast path: an agent's batch of finished one-off runs. One statement, and no per-report bookkeeping
  // when it records them all (what a busy agent sends nearly every time).
  if (reports.every(isPlainSuccess)) {
    const recorded = await completeSimple(pool, reports, now);
    if (recorded === 'all') return reports.map(recordedSuccess);
    // Recurring jobs, stale reports and a job named twice: the general path settles them, without trying
    // the statement again.
    return completeGeneral(pool, reports, retry, now, recorded);
  }
  return completeGeneral(pool, reports, retry, now);
}

/** Canonical (lower-case) job ids only: two spellings of one id must not both reach the statement. */
const CANONICAL_JOB_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function isPlainSuccess(report: CompletionReport): boolean {
  return (
    report.outcome === 'SUCCEEDED' &&
    CANONICAL_JOB_ID.test(report.jobId) &&
    Number.isSafeInteger(report.leaseGeneration) &&
    report.leaseGeneration >= 1
  );
}

function recordedSuccess(report: CompletionReport): CompleteResult {
  return {
    kind: 'recorded',
    jobId: report.jobId,
    leaseGeneration: report.leaseGeneration,
    state: 'COMPLETED',
    nextRunAt: null,
    runOutcome: 'SUCCEEDED',
    skipped: 0,
  };
}

/**
 * Runs COMPLETE_SIMPLE_SQL for well-formed SUCCEEDED reports; answers the
 * reports it recorded: `all` (what a busy agent's batch nearly always gets,
 * read from the row count alone), or their heldLeaseKeys (the others are
 * recurring jobs, stale, another agent's, or a second report of a job). The
 * statement answers by job id, so it gets each job once: the first report
 * naming it. The reports go in job-id order (`holderArrays`), the order the
 * statement then locks their rows in; should PostgreSQL still find a deadlock
 * (a plan that visits the rows in another order), the statement, which
 * changed nothing, is run again.
 */
async function completeSimple(
  pool: Pool,
  reports: readonly HeldLeaseRef[],
  now: Date | undefined,
): Promise<'all' | Set<string>> {
  const byId = new Map<string, HeldLeaseRef>();
  for (const report of reports) {
    const id = report.jobId.toLowerCase();
    if (!byId.has(id)) byId.set(id, report);
  }
  const values = [now ?? null, ...holderArrays(byId.size === reports.length ? reports : [...byId.values()])];
  for (let attempt = 1; ; attempt++) {
    try {
      const { rows } = await pool.query<[string]>({
        name: 'kairos_complete_simple',
        text: COMPLETE_SIMPLE_SQL,
        values,
        rowMode: 'array',
      });
      // One row per job recorded: as many rows as reports means each report was recorded.
      if (rows.length === reports.length) return 'all';
      return new Set(rows.map(([id]) => heldKeyOf(byId.get(id)!)));
    } catch (error: unknown) {
      if (sqlState(error) !== SQLSTATE.deadlockDetected || attempt === DEADLOCK_ATTEMPTS) throw error;
    }
  }
}

/** How often a completion batch is tried when PostgreSQL breaks a deadlock by failing it. */
const DEADLOCK_ATTEMPTS = 3;

/**
 * Every other batch: duplicates, failures, recurring jobs. `recorded`: the
 * heldLeaseKeys the fast path has already recorded (it then is not tried again).
 *
 * Reports are told apart by holder as well as lease (heldLeaseKey): one flush
 * merges several agents' reports, and another agent naming a lease must
 * neither hide its holder's report nor be told that it was recorded.
 */
async function completeGeneral(
  pool: Pool,
  reports: readonly CompletionReport[],
  retry: RetryPolicy,
  now: Date | undefined,
  recorded?: ReadonlySet<string>,
): Promise<CompleteResult[]> {
  // Duplicates within one batch (the same lease and holder): the first report wins, the others are stale.
  const keys = reports.map(heldKeyOf);
  const firstIndex = new Map<string, number>();
  keys.forEach((key, index) => {
    if (isWellFormed(reports[index]!) && !firstIndex.has(key)) firstIndex.set(key, index);
  });
  const first = [...firstIndex].map(([key, index]) => [key, reports[index]!] as const);
  // Only the state, next run time and recorded outcome are reported back (CompleteResult).
  const settled = new Map<string, Pick<Settlement, 'state' | 'nextRunAt' | 'runOutcome' | 'skips'>>();
  const success = { state: 'COMPLETED', nextRunAt: null, runOutcome: 'SUCCEEDED', skips: [] } as const;
  if (recorded !== undefined) {
    for (const key of recorded) settled.set(key, success);
  } else {
    // Successful one-off runs take the one-statement path first; what it does not record (another
    // holder's report of the same job among them) takes the locked path.
    const simple = first.filter(([, report]) => report.outcome === 'SUCCEEDED');
    if (simple.length > 0) {
      const recordedNow = await completeSimple(pool, simple.map(([, report]) => report), now);
      for (const [key] of simple) if (recordedNow === 'all' || recordedNow.has(key)) settled.set(key, success);
    }
  }
  // Everything else (failures, recurring jobs, and reports the fast path did not match,
  // which are either recurring or stale) takes the locked path below.
  const candidates = new Map(first.filter(([key]) => !settled.has(key)));
  if (candidates.size > 0) {
    await inTransaction(pool, async (client) => {
      const { rows } = await client.query(
        LOCK_ENDINGS_SQL,
        [now ?? null, ...holderArrays([...candidates.values()])],
      );
      if (rows.length === 0) return;
      const dbNow = rows[0]!.now as Date;
      // A row is locked only for its holder's report, so its holder names the report.
      const endings = rows.map((row): Ending & { key: string } => {
        const job = toLockedJob(row);
        const key = heldLeaseKey(job.id, job.leaseGeneration, row.lease_owner, row.lease_token);
        const report = candidates.get(key)!;
        return { job, key, outcome: report.outcome, error: truncateError(report.error) };
      });
      const results = await applyEndings(client, endings, dbNow, retry);
      for (const { job, key } of endings) settled.set(key, results.get(job.id)!);
    });
  }
  const refused = reports.filter((_, index) => !settled.has(keys[index]!));
  const current = await currentHolders(pool, refused);
  return reports.map((report, index): CompleteResult => {
    const key = keys[index]!;
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
      runOutcome: settlement.runOutcome,
      skipped: skippedCount(settlement.skips),
    };
  });
}

/** How many occurrences some skipped stretches cover (rows listed and not). */
function skippedCount(stretches: readonly SkippedStretch[]): number {
  return stretches.reduce((sum, stretch) => sum + stretch.count, 0);
}

/** The batch of leases a completion names, from its second parameter. */
const HELD = heldLeases(2);

/**
 * Completion of successful one-off runs in one statement (one round trip, one
 * commit for the whole batch): fenced like every other write, on CLAIMED and
 * the generation. The run is recorded on the job row (decision 0033): its id
 * and start are there since the claim, the UPDATE adds its end and its worker
 * (the holder, whose lease_owner it clears), and the `runs` view lists it
 * SUCCEEDED from there. One row version per completion and no run row: a
 * COMPLETED one-off job never changes state again, so its run reads the same
 * for as long as the job exists.
 *
 * No separate locking step: the UPDATE locks each row as its nested loop over
 * the batch's arrays reaches it by primary key, so in the order of the arrays,
 * which `holderArrays` sorts by job id: the order `lockInIdOrder` locks in
 * for renewals and the other batches, so the two cannot deadlock
 * (lock-order.pg.test.ts). The `SELECT … ORDER BY id FOR UPDATE` it used to
 * run first cost a lock record per row and a second primary-key lookup, about
 * a tenth of the statement (docs/benchmarks.md). If PostgreSQL did report a
 * deadlock (a plan that scans a tiny table instead of probing its key),
 * `completeSimple` runs the statement again.
 *
 * It answers the ids of the jobs it recorded, nothing more: the input names
 * each job once (`completeSimple` makes sure), so the ids say which reports
 * were recorded, and a batch recorded whole is told by its row count. The
 * UPDATE matches the holder too: another agent's report of a lease is not
 * recorded.
 */
export const COMPLETE_SIMPLE_SQL = `
UPDATE jobs j SET state = 'COMPLETED', next_run_at = NULL, lease_until = NULL, lease_owner = NULL, lease_token = NULL,
  run_worker_id = j.lease_owner, run_finished_at = ${NOW(1)}, ${CLEAR_ABORT}, updated_at = ${NOW(1)}
FROM ${HELD.from}
WHERE ${HELD.match} AND ${HELD.claimed} AND j.schedule IS NULL
RETURNING j.id`;

/** Leases past their lease_until, oldest first: read through jobs_claimed_lease_until_idx. */
export const EXPIRED_SQL = `
SELECT ${LOCKED_COLUMNS}, ${NOW(1)} AS now
FROM jobs j
WHERE j.state = 'CLAIMED' AND j.lease_until < ${NOW(1)}
ORDER BY j.lease_until
LIMIT $2
FOR UPDATE SKIP LOCKED`;

/**
 * Leases whose lease_until has passed go back to DUE (or DEAD at the cap, or the
 * next occurrence for a recurring job at the cap); their run is marked
 * LEASE_EXPIRED. SKIP LOCKED lets reapers on several coordinators share the work,
 * and lets a concurrent completion of the same row win: it holds the lock, and
 * once it commits the row is no longer CLAIMED with that generation.
 */
export async function reapExpired(
  pool: Pool,
  retry: RetryPolicy,
  options: { limit?: number; now?: Date } = {},
): Promise<ReapResult> {
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query(EXPIRED_SQL, [options.now ?? null, options.limit ?? 1000]);
    if (rows.length === 0) return { expired: [], skipped: 0 };
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
      skipped: [...settled.values()].reduce((sum, settlement) => sum + skippedCount(settlement.skips), 0),
    };
  });
}

/** The run's error text: the reported one, prefixed by the abort that decided the run, if any. */
function runError(ending: Ending, settlement: Settlement): string | null {
  if (settlement.abortedBy === null && ending.job.abort === null) return ending.error;
  if (settlement.runOutcome === 'SUCCEEDED') return null;
  const who = ending.job.abort?.by ?? 'an operator';
  if (settlement.runOutcome === 'LEASE_EXPIRED') {
    return `aborted by ${who}, but the agent never confirmed that the run stopped: the lease expired`;
  }
  return truncateError(`aborted by ${who}${ending.error ? `: ${ending.error}` : ''}`);
}

/** Upper bound on SKIPPED rows written for one missed stretch; the last row states the full count. */
const SKIPPED_ROWS_LIMIT = 100;

/**
 * The settled job rows of a batch of endings (rows the transaction locked),
 * one element of the arrays per job, found by primary key (`jobIdIn`).
 */
export const SETTLE_JOBS_SQL = `UPDATE jobs j SET
    state = u.state, next_run_at = u.next_run_at, occurrence_at = u.occurrence_at, attempt = u.attempt,
    paused_reason = u.paused_reason,
    rescheduled_at = CASE WHEN u.occurrence_at IS NOT DISTINCT FROM j.occurrence_at THEN j.rescheduled_at END,
    run_through = u.run_through, decided_through = u.decided_through, next_reason = u.next_reason, busy_since = u.busy_since,
    backfill_resume_at = u.backfill_resume_at,
    lease_until = NULL, lease_owner = NULL, lease_token = NULL, ${CLEAR_ABORT}, updated_at = $12
  FROM unnest($1::uuid[], $2::kairos_job_state[], $3::timestamptz[], $4::timestamptz[], $5::int[], $6::text[],
              $7::timestamptz[], $8::timestamptz[], $9::text[], $10::timestamptz[], $11::timestamptz[])
    AS u(id, state, next_run_at, occurrence_at, attempt, paused_reason, run_through, decided_through, next_reason, busy_since,
         backfill_resume_at)
  WHERE j.id = u.id AND ${jobIdIn('SELECT unnest($1::uuid[])')}`;

/** Writes the settlement of locked, CLAIMED rows: job row, the ended run's row, and SKIPPED rows. Three statements. */
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
    SETTLE_JOBS_SQL,
    [
      ids,
      plans.map((p) => p.state),
      plans.map((p) => p.nextRunAt),
      plans.map((p) => p.occurrenceAt),
      plans.map((p) => p.attempt),
      plans.map((p) => p.pausedReason),
      plans.map((p) => p.runThrough),
      plans.map((p) => p.decidedThrough),
      plans.map((p) => p.nextReason),
      plans.map((p) => p.busySince),
      plans.map((p) => p.backfillResumeAt),
      now,
    ],
  );
  // The ended runs, whole (decision 0027): the values the locked rows carried before the UPDATE above.
  await client.query(
    `WITH u AS (
       SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::int[], $4::bigint[], $5::timestamptz[], $6::text[], $7::timestamptz[],
                            $8::kairos_run_outcome[], $9::text[], $10::text[], $12::text[])
         AS t(run_id, id, attempt, lease_generation, occurrence_at, lease_owner, run_started_at, outcome, error, aborted_by, next_reason)
     )
     ${insertEndedRuns('u', { finishedAt: '$11', outcome: 'u.outcome', error: 'u.error', abortedBy: 'u.aborted_by' })}`,
    [
      endings.map((e) => e.job.runId),
      ids,
      endings.map((e) => e.job.attempt),
      endings.map((e) => e.job.leaseGeneration),
      endings.map((e) => e.job.occurrenceAt),
      endings.map((e) => e.job.leaseOwner),
      endings.map((e) => e.job.runStartedAt),
      plans.map((p) => p.runOutcome),
      endings.map((e, index) => runError(e, plans[index]!)),
      plans.map((p) => p.abortedBy),
      now,
      endings.map((e) => e.job.nextReason),
    ],
  );

  await insertSkipped(
    client,
    endings.flatMap(({ job }) => settled.get(job.id)!.skips.map((stretch) => ({ jobId: job.id, stretch }))),
    now,
  );
  return settled;
}

/** What a SKIPPED row's error says, by the policy that decided it. */
const SKIP_NOTES: Record<SkippedStretch['reason'], string> = {
  'misfire:fire-once': 'occurrence missed (misfire policy fire-once: only the latest missed one ran)',
  'misfire:skip': 'occurrence missed (misfire policy skip)',
  'misfire:catch-up': 'occurrence missed and older than the catch-up window (misfire policy catch-up)',
  'overlap:skip': 'came due while the previous run was still running (overlap policy skip)',
  'overlap:buffer-one': 'came due while the previous run was still running, after the one buffered (overlap policy buffer-one)',
  'overlap:buffer-all': 'came due while the previous run was still running, beyond the buffer (overlap policy buffer-all)',
  'overlap:cancel-other': 'replaced by a newer occurrence (overlap policy cancel-other)',
};

/**
 * Records SKIPPED runs, at most SKIPPED_ROWS_LIMIT per stretch (the planner
 * lists no more); the last row of a stretch names how many more it missed.
 */
async function insertSkipped(
  client: PoolClient,
  items: ReadonlyArray<{ jobId: string; stretch: SkippedStretch }>,
  now: Date,
): Promise<void> {
  const jobIds: string[] = [];
  const scheduledFor: Date[] = [];
  const notes: string[] = [];
  const reasons: string[] = [];
  for (const { jobId, stretch } of items) {
    const listed = stretch.listed.slice(0, SKIPPED_ROWS_LIMIT);
    listed.forEach((occurrence, index) => {
      jobIds.push(jobId);
      scheduledFor.push(occurrence);
      reasons.push(stretch.reason);
      const unlisted = stretch.count - listed.length;
      notes.push(
        SKIP_NOTES[stretch.reason] + (index === listed.length - 1 && unlisted > 0 ? `; ${unlisted} later missed occurrences not listed` : ''),
      );
    });
  }
  if (jobIds.length === 0) return;
  await client.query(
    `INSERT INTO ended_runs (job_id, attempt, lease_generation, scheduled_for, outcome, finished_at, error, reason)
     SELECT u.job_id, 0, NULL, u.scheduled_for, 'SKIPPED', $4, u.note, u.reason
     FROM unnest($1::uuid[], $2::timestamptz[], $3::text[], $5::text[]) AS u(job_id, scheduled_for, note, reason)`,
    [jobIds, scheduledFor, notes, now, reasons],
  );
}

/** A DUE recurring job not in a backfill or a decided next run: what the misfire sweep may move on. */
const MISFIRE_CANDIDATE = `j.state = 'DUE' AND j.schedule IS NOT NULL AND j.backfill_resume_at IS NULL AND j.next_reason IS NULL`;
const LATE_SKIP = `j.misfire_policy = 'skip' AND j.next_run_at < ${NOW(1)} - make_interval(secs => $2::double precision / 1000)`;
const LATE_CATCH_UP = `j.misfire_policy = 'catch-up' AND j.catchup_window_ms IS NOT NULL AND j.attempt = 0
  AND j.occurrence_at < ${NOW(1)} - make_interval(secs => j.catchup_window_ms::double precision / 1000)`;

/**
 * Late `skip` and `catch-up` jobs, oldest due first. Each kind is found through
 * its own index (the due index by next_run_at; jobs_due_catchup_occurrence_idx,
 * the window being positive, by occurrence_at before now): one statement with
 * the two tests OR-ed together was a sequential scan of every job on every
 * reaper pass. The locking query tests the rows again, on their latest version.
 */
export const MISFIRED_SQL = `
WITH late AS MATERIALIZED (
  (SELECT j.id FROM jobs j WHERE ${MISFIRE_CANDIDATE} AND ${LATE_SKIP} ORDER BY j.next_run_at LIMIT $3)
  UNION ALL
  (SELECT j.id FROM jobs j WHERE ${MISFIRE_CANDIDATE} AND ${LATE_CATCH_UP} AND j.occurrence_at < ${NOW(1)} ORDER BY j.next_run_at LIMIT $3)
)
SELECT ${LOCKED_COLUMNS}, ${NOW(1)} AS now
FROM jobs j
WHERE j.id IN (SELECT id FROM late) AND ${MISFIRE_CANDIDATE} AND ((${LATE_SKIP}) OR (${LATE_CATCH_UP}))
ORDER BY j.next_run_at
LIMIT $3
FOR UPDATE OF j SKIP LOCKED`;

/**
 * Late jobs the claim must not serve as they are, moved on in the reaper's
 * pass on every coordinator (SKIP LOCKED shares the work):
 *
 * - `skip` means an occurrence never runs late. A recurring `skip` job whose
 *   pending occurrence is later than the threshold (the claim leaves such rows
 *   alone) is moved to its next future occurrence; the occurrence it was
 *   waiting to serve and every one after it up to now are recorded SKIPPED.
 * - `catch-up` runs missed occurrences no older than the job's window. A job
 *   waiting on an occurrence older than that is moved to the oldest one inside
 *   the window, and runs every one from there in order (a planned stretch);
 *   the older ones are recorded SKIPPED.
 */
export async function skipMisfired(
  pool: Pool,
  options: { thresholdMs?: number; limit?: number; now?: Date } = {},
): Promise<{ skipped: number; occurrences: number }> {
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query(MISFIRED_SQL, [options.now ?? null, options.thresholdMs ?? DEFAULT_MISFIRE_THRESHOLD_MS, options.limit ?? 1000]);
    if (rows.length === 0) return { skipped: 0, occurrences: 0 };
    const now = rows[0]!.now as Date;
    const items = rows.map((row) => {
      const job = toLockedJob(row);
      const schedule = { expression: job.schedule!, timezone: job.timezone };
      if (job.misfirePolicy === 'catch-up') {
        // The pending occurrence counts as missed too: plan as if the one before it had just been served.
        const plan = planNextRun(schedule, {
          served: new Date(job.occurrenceAt.getTime() - 1),
          now,
          runStartedAt: new Date(now.getTime() + 1),
          misfire: 'catch-up',
          overlap: job.overlapPolicy,
          catchupWindowMs: job.catchupWindowMs,
        });
        return { job, next: plan.next, skips: plan.skipped, runThrough: plan.runThrough, reason: plan.reason };
      }
      const plan = planAfterOccurrence(schedule, job.occurrenceAt, now, 'skip');
      const stretch: SkippedStretch = { reason: 'misfire:skip', listed: [job.occurrenceAt, ...plan.skipped], count: plan.skippedCount + 1 };
      return { job, next: plan.next, skips: [stretch], runThrough: null, reason: null };
    });
    await client.query(
      `UPDATE jobs j SET next_run_at = u.start, occurrence_at = u.next, attempt = 0, rescheduled_at = NULL,
         run_through = u.run_through, next_reason = u.reason, decided_through = $6, busy_since = NULL, updated_at = $6
       FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[], $4::timestamptz[], $5::text[])
         AS u(id, next, start, run_through, reason)
       WHERE j.id = u.id AND ${jobIdIn('SELECT unnest($1::uuid[])')}`,
      [
        items.map((i) => i.job.id),
        items.map((i) => i.next),
        items.map((i) => startOf(i.job.id, i.next, i.job.startJitterMs)),
        items.map((i) => i.runThrough),
        items.map((i) => i.reason),
        now,
      ],
    );
    await insertSkipped(client, items.flatMap(({ job, skips }) => skips.map((stretch) => ({ jobId: job.id, stretch }))), now);
    return { skipped: items.length, occurrences: items.reduce((sum, item) => sum + skippedCount(item.skips), 0) };
  });
}

/** Running `cancel-other` jobs, for abortOverlapped to test their next occurrence. */
export const OVERLAPPED_SQL = `
SELECT j.id, j.namespace, j.schedule, j.timezone, j.occurrence_at, j.lease_generation, j.rescheduled_at,
       j.run_started_at, ${NOW(1)} AS now
FROM jobs j
WHERE j.state = 'CLAIMED' AND j.overlap_policy = 'cancel-other' AND j.schedule IS NOT NULL AND j.abort_requested_at IS NULL
  AND j.run_through IS NULL AND j.backfill_resume_at IS NULL
ORDER BY j.occurrence_at
LIMIT $2`;

/**
 * `cancel-other`: a recurring job whose next occurrence came due while its run
 * runs (at or after the run started, under the schedule in force) has that run
 * aborted, fenced on its lease generation, by "overlap policy cancel-other";
 * when the run has stopped, its settlement runs the newest occurrence. Runs of
 * a planned stretch (a catch-up, a buffer, a backfill) are left to finish: the
 * occurrences they serve are already late. Runs in the reaper's pass; the
 * abort notifies like an operator's.
 */
export async function abortOverlapped(pool: Pool, options: { limit?: number; now?: Date } = {}): Promise<{ aborted: number }> {
  const { rows } = await pool.query(OVERLAPPED_SQL, [options.now ?? null, options.limit ?? 1000]);
  let aborted = 0;
  for (const row of rows) {
    const floor = Math.max(
      (row.occurrence_at as Date).getTime(),
      row.run_started_at === null ? -Infinity : (row.run_started_at as Date).getTime() - 1,
      row.rescheduled_at === null ? -Infinity : (row.rescheduled_at as Date).getTime() - 1,
    );
    const following = nextOccurrence({ expression: row.schedule, timezone: row.timezone }, new Date(floor));
    if (following === null || following.getTime() > (row.now as Date).getTime()) continue;
    const result = await requestAbort(
      pool,
      row.namespace,
      row.id,
      { by: 'overlap policy cancel-other', stopSchedule: false, leaseGeneration: Number(row.lease_generation) },
      options.now,
    );
    if (result.kind === 'requested') aborted++;
  }
  return { aborted };
}
