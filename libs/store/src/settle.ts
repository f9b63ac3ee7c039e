/**
 * What becomes of a job when an attempt ends: the one pure decision behind both
 * `complete` (an agent reported) and `reapExpired` (nobody renewed in time).
 *
 * Rules (docs/api.md "Recurring jobs"):
 * - success, one-off        -> COMPLETED
 * - success, recurring      -> DUE at the next occurrence computed from the
 *                              occurrence just served (never from finish time);
 *                              missed occurrences follow the misfire policy and
 *                              are returned to be recorded as SKIPPED runs
 * - failure, attempts left  -> DUE again for the same occurrence after an
 *                              exponential backoff (a lost lease retries at once:
 *                              the lease already cost its duration)
 * - failure, cap reached    -> one-off: DEAD (a human must look);
 *                              recurring: the failure is recorded and the job
 *                              goes on to its next occurrence, as on success
 *
 * `attempt` counts attempts spent on the current occurrence; a claim spends one,
 * so it is reset to 0 only when the job moves to a new occurrence.
 */
import { planAfterOccurrence, retryBackoffMs, type MisfirePolicy } from '@kairos/schedule';

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
}

export interface Settlement {
  state: 'DUE' | 'COMPLETED' | 'DEAD';
  nextRunAt: Date | null;
  occurrenceAt: Date | null;
  attempt: number;
  /** Occurrences that will not run, each to be recorded as a SKIPPED run. */
  skipped: Date[];
  /** How many occurrences were skipped in all (skipped lists at most a bounded number). */
  skippedCount: number;
}

export interface RetryPolicy {
  /** First retry delay; doubles per failed attempt. Default 1000. */
  backoffBaseMs?: number;
  /** Longest retry delay. Default 1 hour. */
  backoffCapMs?: number;
}

export function settle(job: SettlingJob, outcome: AttemptOutcome, now: Date, retry: RetryPolicy = {}): Settlement {
  const succeeded = outcome === 'SUCCEEDED';
  if (!succeeded && job.attempt < job.maxAttempts) {
    const delayMs =
      outcome === 'LEASE_EXPIRED'
        ? 0
        : retryBackoffMs(job.attempt, { baseMs: retry.backoffBaseMs ?? 1000, capMs: retry.backoffCapMs ?? 3_600_000 });
    return {
      state: 'DUE',
      nextRunAt: new Date(now.getTime() + delayMs),
      occurrenceAt: job.occurrenceAt,
      attempt: job.attempt,
      skipped: [],
      skippedCount: 0,
    };
  }
  if (job.schedule === null) {
    return {
      state: succeeded ? 'COMPLETED' : 'DEAD',
      nextRunAt: null,
      occurrenceAt: job.occurrenceAt,
      attempt: job.attempt,
      skipped: [],
      skippedCount: 0,
    };
  }
  const plan = planAfterOccurrence(
    { expression: job.schedule, timezone: job.timezone },
    job.occurrenceAt,
    now,
    job.misfirePolicy,
  );
  return {
    state: 'DUE',
    nextRunAt: plan.next,
    occurrenceAt: plan.next,
    attempt: 0,
    skipped: plan.skipped,
    skippedCount: plan.skippedCount,
  };
}
