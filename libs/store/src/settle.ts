/**
 * What becomes of a job when an attempt ends: the one pure decision behind both
 * `complete` (an agent reported) and `reapExpired` (nobody renewed in time).
 *
 * Rules (docs/api.md "Recurring jobs"):
 * - success, one-off        -> COMPLETED
 * - success, recurring      -> DUE at the next occurrence computed from the
 *                              occurrence just served (never from finish time);
 *                              occurrences missed before the run started follow
 *                              the misfire policy, those that came due while it
 *                              ran the overlap policy (@kairos/schedule
 *                              run-plan.ts); the ones not run are returned to be
 *                              recorded as SKIPPED runs, with their reason
 * - failure, attempts left  -> DUE again for the same occurrence after an
 *                              exponential backoff (a lost lease retries at once:
 *                              the lease already cost its duration)
 * - failure, cap reached    -> one-off: DEAD (a human must look);
 *                              recurring: the failure is recorded and the job
 *                              goes on to its next occurrence, as on success;
 *                              with pauseOnFailure it is PAUSED there instead,
 *                              with the reason recorded
 *
 * Retry delays follow the job's retry policy (its own, or the coordinator's
 * defaults), with deterministic jitter; a recurring job's next start is its
 * next occurrence plus its start jitter (`startOf`).
 * - aborted by an operator  -> never retried. The run is recorded CANCELLED
 *   (any end but success)      (LEASE_EXPIRED if the agent never confirmed it
 *                              stopped); one-off: CANCELLED; recurring: its next
 *                              occurrence, or CANCELLED with `stopSchedule`
 * - aborted, but the run     -> recorded SUCCEEDED (the work was done); the job
 *   succeeded first            moves on as on any success, except that
 *                              `stopSchedule` still ends it CANCELLED
 *
 * `attempt` counts attempts spent on the current occurrence; a claim spends one,
 * so it is reset to 0 only when the job moves to a new occurrence.
 */
import {
  continueStretch,
  jittered,
  planNextRun,
  retryBackoffMs,
  stableFraction,
  type MisfirePolicy,
  type OverlapPolicy,
  type SkippedStretch,
} from '@kairos/schedule';

/** How an attempt ended, as recorded on its run row. */
export type AttemptOutcome = 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'CANCELLED' | 'LEASE_EXPIRED';

/** The columns the decision reads, from the row locked by the caller. */
export interface SettlingJob {
  schedule: string | null;
  timezone: string;
  occurrenceAt: Date;
  attempt: number;
  maxAttempts: number;
  misfirePolicy: MisfirePolicy;
  /** An operator's abort of the run being settled (POST /jobs/{id}/abort); null when none. */
  abort: AbortRequest | null;
  /** Seeds the deterministic jitter. */
  id: string;
  /** The job's own retry policy; each null field takes the default. */
  retry: JobRetry;
  /** A recurring job's occurrences start up to this much later (fixed per occurrence). */
  startJitterMs: number;
  /** A recurring job whose occurrence exhausts its attempts is PAUSED instead of moving on. */
  pauseOnFailure: boolean;
  /** When the schedule was edited while this run was in progress: the next occurrence is planned from here. */
  rescheduledAt: Date | null;
  overlapPolicy: OverlapPolicy;
  /** catch-up: missed occurrences older than this are skipped. */
  catchupWindowMs: number | null;
  /** A planned stretch: keep serving every occurrence up to here, in order. */
  runThrough: Date | null;
  /** How far the last plan decided. */
  decidedThrough: Date | null;
  /** Why the run being settled ran (carried through a planned stretch). */
  nextReason: string | null;
  /** When the run being settled started (its claim); null when unknown. */
  runStartedAt: Date | null;
  /** Since when the job has been running planned runs back to back; null when this run was on time. */
  busySince: Date | null;
  /** During a backfill: the regular occurrence to resume from when the backfill's stretch ends. */
  backfillResumeAt: Date | null;
  /** When the run being settled became due (its next_run_at at the claim). */
  dueAt: Date | null;
}

/**
 * A planned late run that waited longer than this to be claimed (no agent
 * free, an outage) breaks the busy stretch: what came due while it waited was
 * missed because the job was late, not because it was busy.
 */
export const CHAIN_GAP_MS = 60_000;

/** A job's retry policy as stored: null fields take the coordinator's defaults. */
export interface JobRetry {
  initialMs: number | null;
  maxMs: number | null;
  multiplier: number | null;
  jitter: number | null;
}

export const NO_JOB_RETRY: JobRetry = { initialMs: null, maxMs: null, multiplier: null, jitter: null };

export interface AbortRequest {
  /** Who asked (a token's name and id), recorded on the run. */
  by: string | null;
  /** End a recurring job's schedule too, instead of going on to its next occurrence. */
  stopSchedule: boolean;
}

export interface Settlement {
  state: 'DUE' | 'COMPLETED' | 'DEAD' | 'CANCELLED' | 'PAUSED';
  /** Why a failing recurring job was paused (pauseOnFailure); null otherwise. */
  pausedReason: string | null;
  /** What the run row records: the attempt's outcome, or CANCELLED for a run an operator aborted. */
  runOutcome: AttemptOutcome;
  /** Who aborted the run, for runs.aborted_by; null unless an abort decided it. */
  abortedBy: string | null;
  nextRunAt: Date | null;
  occurrenceAt: Date | null;
  attempt: number;
  /** Occurrences that will not run, by the policy that decided, to be recorded as SKIPPED runs. */
  skips: readonly SkippedStretch[];
  /** The planned stretch and its reason (recurring jobs), written back to the job. */
  runThrough: Date | null;
  decidedThrough: Date | null;
  nextReason: string | null;
  busySince: Date | null;
  backfillResumeAt: Date | null;
}

export interface RetryPolicy {
  /** First retry delay; doubles per failed attempt. Default 1000. */
  backoffBaseMs?: number;
  /** Longest retry delay. Default 1 hour. */
  backoffCapMs?: number;
}

/** When an occurrence may start: the occurrence plus the job's start jitter, fixed per job and occurrence. */
export function startOf(jobId: string, occurrence: Date, startJitterMs: number): Date {
  if (startJitterMs <= 0) return occurrence;
  return new Date(occurrence.getTime() + Math.floor(stableFraction(jobId, occurrence.getTime(), 'start') * startJitterMs));
}

/** A job's retry policy with each null field filled from the coordinator's defaults (or the built-in ones). */
export function effectiveRetry(
  retry: JobRetry,
  defaults: RetryPolicy,
): { initialMs: number; maxMs: number; multiplier: number; jitter: number } {
  return {
    initialMs: retry.initialMs ?? defaults.backoffBaseMs ?? 1000,
    maxMs: retry.maxMs ?? defaults.backoffCapMs ?? 3_600_000,
    multiplier: retry.multiplier ?? 2,
    jitter: retry.jitter ?? 0,
  };
}

/** The delay before retrying after `job.attempt` failed: the job's policy, else the defaults, jittered deterministically. */
export function retryDelayMs(job: Pick<SettlingJob, 'id' | 'retry' | 'attempt' | 'occurrenceAt'>, defaults: RetryPolicy = {}): number {
  const { initialMs, maxMs, multiplier, jitter } = effectiveRetry(job.retry, defaults);
  const delayMs = retryBackoffMs(job.attempt, { baseMs: initialMs, capMs: maxMs, multiplier });
  return jitter === 0 ? delayMs : jittered(delayMs, jitter, stableFraction(job.id, job.occurrenceAt.getTime(), job.attempt));
}

export function settle(job: SettlingJob, outcome: AttemptOutcome, now: Date, retry: RetryPolicy = {}): Settlement {
  const succeeded = outcome === 'SUCCEEDED';
  const recorded = { runOutcome: outcome, abortedBy: null };
  if (job.abort !== null) {
    const aborted = {
      runOutcome: succeeded || outcome === 'LEASE_EXPIRED' ? outcome : ('CANCELLED' as const),
      abortedBy: succeeded ? null : job.abort.by,
    };
    if (job.abort.stopSchedule || (job.schedule === null && !succeeded)) return finished('CANCELLED', job, aborted);
    if (job.schedule === null) return finished('COMPLETED', job, aborted);
    return nextOccurrence(job, now, aborted);
  }
  if (!succeeded && job.attempt < job.maxAttempts) {
    const delayMs = outcome === 'LEASE_EXPIRED' ? 0 : retryDelayMs(job, retry);
    return {
      state: 'DUE',
      ...recorded,
      pausedReason: null,
      nextRunAt: new Date(now.getTime() + delayMs),
      occurrenceAt: job.occurrenceAt,
      attempt: job.attempt,
      // A retry serves the same occurrence: the plan it belongs to stands.
      skips: [],
      runThrough: job.runThrough,
      decidedThrough: job.decidedThrough,
      nextReason: job.nextReason,
      busySince: job.busySince,
      backfillResumeAt: job.backfillResumeAt,
    };
  }
  if (job.schedule === null) return finished(succeeded ? 'COMPLETED' : 'DEAD', job, recorded);
  const next = nextOccurrence(job, now, recorded);
  if (!succeeded && job.pauseOnFailure) {
    const reason = `paused on failure: occurrence ${job.occurrenceAt.toISOString()} ended ${outcome} after ${job.attempt} of ${job.maxAttempts} attempts`;
    return { ...next, state: 'PAUSED', pausedReason: reason };
  }
  return next;
}

type RunRecording = Pick<Settlement, 'runOutcome' | 'abortedBy'>;

const NO_PLAN = { skips: [], runThrough: null, decidedThrough: null, nextReason: null, busySince: null, backfillResumeAt: null } as const;

function finished(state: 'COMPLETED' | 'DEAD' | 'CANCELLED', job: SettlingJob, run: RunRecording): Settlement {
  return { state, ...run, pausedReason: null, nextRunAt: null, occurrenceAt: job.occurrenceAt, attempt: job.attempt, ...NO_PLAN };
}

/**
 * A recurring job moves on: within a planned stretch, to the stretch's next
 * occurrence; otherwise by a new plan (run-plan.ts) for what it missed.
 */
function nextOccurrence(job: SettlingJob, now: Date, run: RunRecording): Settlement {
  const schedule = { expression: job.schedule!, timezone: job.timezone };
  // A run planned late continues the busy stretch that began with the first run of the chain,
  // unless it waited to be claimed (then the stretch starts again with it).
  const waited =
    job.runStartedAt !== null && job.dueAt !== null && job.runStartedAt.getTime() - job.dueAt.getTime() > CHAIN_GAP_MS;
  const busySince = (waited ? null : job.busySince) ?? job.runStartedAt ?? job.occurrenceAt;
  type Plan = Pick<Settlement, 'skips' | 'runThrough' | 'decidedThrough' | 'nextReason' | 'busySince' | 'backfillResumeAt'>;
  const moveTo = (next: Date, fields: Plan): Settlement => {
    const start = startOf(job.id, next, job.startJitterMs);
    return {
      state: 'DUE',
      ...run,
      pausedReason: null,
      // A run planned late is due now: never "late" by the skip policy's threshold, which would drop it.
      nextRunAt: fields.nextReason === null || start.getTime() > now.getTime() ? start : now,
      occurrenceAt: next,
      attempt: 0,
      ...fields,
    };
  };
  // An edit of the schedule while the run ran ends any planned stretch: it was planned under the old schedule.
  if (job.rescheduledAt === null && job.runThrough !== null && job.runThrough.getTime() > job.occurrenceAt.getTime()) {
    const stretch = continueStretch(schedule, job.occurrenceAt, job.runThrough);
    if (stretch !== null) {
      return moveTo(stretch.next, {
        skips: [],
        runThrough: stretch.runThrough,
        decidedThrough: job.decidedThrough,
        nextReason: job.nextReason,
        busySince,
        backfillResumeAt: job.backfillResumeAt,
      });
    }
  }
  // Where the regular schedule continues: after the occurrence served, or, when a
  // backfill ends, from the regular occurrence it interrupted (which counts as missed
  // if it passed meanwhile). After an edit of the schedule, occurrences of the new
  // schedule before the edit were never due.
  const served =
    job.rescheduledAt !== null
      ? new Date(Math.max(job.occurrenceAt.getTime(), job.rescheduledAt.getTime() - 1))
      : job.backfillResumeAt !== null
        ? new Date(job.backfillResumeAt.getTime() - 1)
        : job.occurrenceAt;
  const plan = planNextRun(schedule, {
    served,
    now,
    runStartedAt: busySince,
    misfire: job.misfirePolicy,
    overlap: job.overlapPolicy,
    catchupWindowMs: job.catchupWindowMs,
    // planNextRun starts after the later of served and decidedThrough.
    decidedThrough: job.decidedThrough,
  });
  return moveTo(plan.next, {
    skips: plan.skipped,
    runThrough: plan.runThrough,
    decidedThrough: plan.decidedThrough,
    nextReason: plan.reason,
    busySince: plan.reason === null ? null : busySince,
    backfillResumeAt: null,
  });
}
