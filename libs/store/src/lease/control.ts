/**
 * Client operations on one job: cancel, pause, resume, trigger. Each is one
 * conditional UPDATE; a miss is read back to say why.
 */
import type { Pool } from 'pg';
import { isJobId } from './refs';
import { NOW } from './sql';

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

/**
 * Cancel wins only over a job nobody holds. The UPDATE takes the row lock; if a
 * claim holds it, the UPDATE waits for the claim to commit, re-reads the row,
 * finds it CLAIMED and matches nothing. A claim that comes second skips the
 * locked row (SKIP LOCKED) and then finds it CANCELLED. So exactly one of them
 * wins, and a `claimed` answer means the job is running or about to.
 */
export async function cancel(pool: Pool, namespace: string, jobId: string, now?: Date): Promise<CancelResult> {
  if (!isJobId(jobId)) return { kind: 'not-found' };
  const updated = await pool.query(
    `UPDATE jobs SET state = 'CANCELLED', next_run_at = NULL, paused_reason = NULL, held_until = NULL, updated_at = ${NOW(1)}
     WHERE id = $2 AND namespace = $3 AND state IN ('DUE', 'PAUSED')
     RETURNING id`,
    [now ?? null, jobId, namespace],
  );
  if (updated.rowCount === 1) return { kind: 'cancelled' };
  const { rows } = await pool.query(
    `SELECT j.state, j.lease_generation, j.lease_owner, j.lease_until, j.run_id
     FROM jobs j
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
export function pause(pool: Pool, namespace: string, jobId: string, now?: Date): Promise<ControlResult> {
  return controlUpdate(
    pool,
    namespace,
    jobId,
    `UPDATE jobs SET state = 'PAUSED', held_until = NULL, updated_at = ${NOW(1)}
     WHERE id = $2 AND namespace = $3 AND state = 'DUE'`,
    now,
    ['PAUSED'],
  );
}

/** PAUSED -> DUE (DUE, CLAIMED: no-op); occurrences missed while paused follow the misfire policy. */
export function resume(pool: Pool, namespace: string, jobId: string, now?: Date): Promise<ControlResult> {
  return controlUpdate(
    pool,
    namespace,
    jobId,
    `UPDATE jobs SET state = 'DUE', paused_reason = NULL, updated_at = ${NOW(1)}
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
export function trigger(pool: Pool, namespace: string, jobId: string, now?: Date): Promise<ControlResult> {
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
