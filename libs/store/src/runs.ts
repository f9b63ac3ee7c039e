/**
 * Reading a job's runs: one row per execution, plus one per occurrence that was
 * deliberately not run (SKIPPED). Runs are written only by lease/ (the lease
 * statements), once each, when they end, into `ended_runs`; the `runs` view
 * adds the run in progress of each CLAIMED job, from its job row
 * (docs/decisions/0027).
 */
import { and, asc, eq, gt } from 'drizzle-orm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { isJobId } from './lease';
import { storeCall } from './pg-errors';
import { jobs, runs } from './schema';

export type RunOutcome = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'LEASE_EXPIRED' | 'CANCELLED' | 'SKIPPED';

export interface RunRecord {
  runId: number;
  jobId: string;
  attempt: number;
  /** The fencing token the run was claimed with; null for SKIPPED rows. */
  leaseGeneration: number | null;
  scheduledFor: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  outcome: RunOutcome;
  workerId: string | null;
  error: string | null;
  /** Who aborted the run (POST /jobs/{id}/abort): a token's name and id; null when nobody did. */
  abortedBy: string | null;
  /** The policy that decided this run or skip (`misfire:catch-up`, `overlap:skip`, ...); null for a run on time. */
  reason: string | null;
}

export interface RunQueries {
  /** Runs of a job in the order they were recorded; null when the job is unknown in this namespace. */
  list(namespace: string, jobId: string, options?: { limit?: number; afterRunId?: number }): Promise<RunRecord[] | null>;
}

export function runQueries(db: NodePgDatabase): RunQueries {
  return {
    // Database trouble is StoreUnavailableError (the API's 503), like every other store call.
    list: (namespace, jobId, options = {}) => storeCall('runs.list', () => listRuns(db, namespace, jobId, options)),
  };
}

async function listRuns(
  db: NodePgDatabase,
  namespace: string,
  jobId: string,
  options: { limit?: number; afterRunId?: number },
): Promise<RunRecord[] | null> {
  if (!isJobId(jobId)) return null;
  const owner = await db
    .select({ id: jobs.id })
    .from(jobs)
    .where(and(eq(jobs.namespace, namespace), eq(jobs.id, jobId)));
  if (owner.length === 0) return null;
  const rows = await db
    .select()
    .from(runs)
    .where(and(eq(runs.jobId, jobId), gt(runs.id, options.afterRunId ?? 0)))
    .orderBy(asc(runs.id))
    .limit(options.limit ?? 1000);
  return rows.map((row) => ({
    runId: row.id,
    jobId: row.jobId,
    attempt: row.attempt,
    leaseGeneration: row.leaseGeneration,
    scheduledFor: row.scheduledFor,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    outcome: row.outcome,
    workerId: row.workerId,
    error: row.error,
    abortedBy: row.abortedBy,
    reason: row.reason,
  }));
}
