/**
 * Retention: deleting run history and finished jobs once they are old enough,
 * in small batches, so the database stops growing with the number of runs
 * (an every-second job writes 86,400 run rows a day).
 *
 * - Runs whose `finished_at` is older than the run retention are deleted
 *   oldest first: each batch looks only at the first `scan` rows in id order
 *   (the primary key, ids grow with claim time) and deletes those old enough.
 *   A run in progress has no row yet (docs/decisions/0027), so it is never
 *   touched.
 *   No extra index: one on finished_at would be written by every completion.
 * - Jobs that are finished for good (COMPLETED, CANCELLED) and unchanged for
 *   longer than the job retention are deleted with their runs (a one-off
 *   job's successful run is on its row, docs/decisions/0033). Jobs are swept
 *   in id order from a cursor the caller keeps, `scan` rows per batch, so a
 *   pass costs the same however many long-lived recurring jobs sit among them.
 *   DEAD jobs are kept: a human must look at them.
 *
 * Every statement is short and locks only rows nobody else changes (finished
 * runs and jobs), so claims and settlements never wait on it; several
 * coordinators running it at once only repeat each other's deletes.
 */
import type { Pool } from 'pg';
import { NOW } from './lease/sql';

export interface RetentionBatch {
  /** Rows deleted by this batch. */
  deleted: number;
}

/** Deletes runs finished before `now - olderThanMs` among the first `scan` runs in id order. */
export async function deleteOldRuns(pool: Pool, options: { olderThanMs: number; scan?: number; now?: Date }): Promise<RetentionBatch> {
  const { rowCount } = await pool.query(
    `DELETE FROM ended_runs WHERE id IN (
       SELECT id FROM (SELECT id, finished_at FROM ended_runs ORDER BY id LIMIT $3) head
       WHERE finished_at < ${NOW(1)} - make_interval(secs => $2::double precision / 1000))`,
    [options.now ?? null, options.olderThanMs, options.scan ?? 2000],
  );
  return { deleted: rowCount ?? 0 };
}

export interface JobSweepBatch {
  deletedJobs: number;
  deletedRuns: number;
  /** Where the next batch starts; null when this batch reached the end (start again from the beginning). */
  nextAfter: string | null;
}

/**
 * Deletes COMPLETED and CANCELLED jobs unchanged since before `now - olderThanMs`, with their runs, among `scan` jobs
 * after `after`. `deletedRuns` counts the ended_runs rows and the successful runs kept on the job rows (decision 0033).
 */
export async function deleteFinishedJobs(
  pool: Pool,
  options: { olderThanMs: number; after?: string | null; scan?: number; now?: Date },
): Promise<JobSweepBatch> {
  const scan = options.scan ?? 2000;
  const { rows } = await pool.query(
    `WITH scanned AS (
       SELECT id, state, updated_at FROM jobs WHERE id > coalesce($3::uuid, '00000000-0000-0000-0000-000000000000') ORDER BY id LIMIT $4
     ), victims AS (
       SELECT j.id FROM jobs j JOIN scanned s ON s.id = j.id
       WHERE s.state IN ('COMPLETED', 'CANCELLED') AND s.updated_at < ${NOW(1)} - make_interval(secs => $2::double precision / 1000)
       FOR UPDATE OF j SKIP LOCKED
     ), gone_runs AS (
       DELETE FROM ended_runs r USING victims v WHERE r.job_id = v.id RETURNING r.id
     ), gone AS (
       DELETE FROM jobs j USING victims v WHERE j.id = v.id RETURNING j.id, j.run_finished_at
     )
     SELECT (SELECT count(*) FROM scanned)::int AS scanned, (SELECT max(id::text) FROM scanned) AS last,
            (SELECT count(*) FROM gone)::int AS jobs,
            ((SELECT count(*) FROM gone_runs) + (SELECT count(run_finished_at) FROM gone))::int AS runs`,
    [options.now ?? null, options.olderThanMs, options.after ?? null, scan],
  );
  const row = rows[0];
  return { deletedJobs: row.jobs, deletedRuns: row.runs, nextAfter: row.scanned < scan ? null : row.last };
}
