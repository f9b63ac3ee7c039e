/**
 * Runs (executions of a job, and visibly skipped occurrences) as this client's
 * callers see them.
 */
import { RunOutcome as WireRunOutcome, type Run as WireRun } from '@kairos/proto';
import { counter, dateOrNull, textOrNull } from './wire-values';

/**
 * How a run ended, or RUNNING. `UNSPECIFIED` is never sent by a coordinator of
 * this version; it stands for a value this client does not know.
 */
export type RunOutcome =
  | 'RUNNING'
  | 'SUCCEEDED'
  | 'FAILED'
  | 'TIMED_OUT'
  | 'LEASE_EXPIRED'
  | 'CANCELLED'
  | 'SKIPPED'
  | 'UNSPECIFIED';

export interface Run {
  runId: string;
  jobId: string;
  /** Which attempt at the occurrence, from 1. */
  attempt: number;
  /** Fencing token the run executed under; 0 for SKIPPED runs. */
  leaseGeneration: number;
  /** The schedule occurrence this run serves (runAt for one-off jobs). */
  scheduledFor: Date | null;
  /** When it was claimed; null for SKIPPED runs. */
  startedAt: Date | null;
  /** When the outcome was recorded; null while RUNNING. */
  finishedAt: Date | null;
  outcome: RunOutcome;
  /** Agent that held the lease; null for SKIPPED runs. */
  workerId: string | null;
  /** Failure message; null on success. */
  error: string | null;
  /** Who aborted the run (abortRun): a token's name and id; null when nobody did. */
  abortedBy: string | null;
  /** The policy that decided this run or skip (`misfire:catch-up`, `overlap:skip`, `backfill`, ...); null for a run on time. */
  reason: string | null;
}

export interface ListRunsOptions {
  /** Page size; server default 100, capped at 1000. */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
}

export interface RunPage {
  runs: Run[];
  /** Cursor for the next page; null on the last page. */
  nextCursor: string | null;
}

const OUTCOME_FROM_WIRE: Record<number, RunOutcome | undefined> = {
  [WireRunOutcome.RUNNING]: 'RUNNING',
  [WireRunOutcome.SUCCEEDED]: 'SUCCEEDED',
  [WireRunOutcome.FAILED]: 'FAILED',
  [WireRunOutcome.TIMED_OUT]: 'TIMED_OUT',
  [WireRunOutcome.LEASE_EXPIRED]: 'LEASE_EXPIRED',
  [WireRunOutcome.CANCELLED]: 'CANCELLED',
  [WireRunOutcome.SKIPPED]: 'SKIPPED',
};

export function runFromWire(run: WireRun): Run {
  return {
    runId: run.runId,
    jobId: run.jobId,
    attempt: run.attempt,
    leaseGeneration: counter(run.leaseGeneration),
    scheduledFor: dateOrNull(run.scheduledFor),
    startedAt: dateOrNull(run.startedAt),
    finishedAt: dateOrNull(run.finishedAt),
    outcome: OUTCOME_FROM_WIRE[run.outcome] ?? 'UNSPECIFIED',
    workerId: textOrNull(run.workerId),
    error: textOrNull(run.error),
    abortedBy: textOrNull(run.abortedBy),
    reason: textOrNull(run.reason),
  };
}
