/**
 * Aborting the run that holds a job's lease. The abort is a request recorded
 * on the CLAIMED row, not a settlement: the lease stays with its holder until
 * the agent reports that the handler has stopped (or the lease expires), so
 * the job can never run twice at once. The request:
 *
 * - is fenced like every lease write: it takes the row lock and matches only a
 *   CLAIMED row, so it races a completion or a reap cleanly (whoever locks
 *   first wins; the loser sees the other's result);
 * - notifies `kairos_abort` (../notifications.ts) in the same statement, so the
 *   coordinator serving the holding agent revokes the lease once it commits;
 * - caps the lease: renewals of an aborted lease extend it no further than
 *   the request time plus the abort grace (renew.ts), so an agent that ignores
 *   the abort loses the lease, and the reaper settles it, soon after;
 * - is idempotent: asking again keeps the first requester and time, and a
 *   later `stopSchedule` is added, never removed.
 *
 * Every settlement (settlement.ts, release.ts) reads the request, records the
 * run as aborted and clears it.
 */
import type { Pool } from 'pg';
import { ABORT_CHANNEL } from '../notifications';
import { isJobId } from './refs';
import { NOW } from './sql';

export interface AbortRequestInput {
  /** Who asks, recorded on the run (a token's name and id). */
  by: string | null;
  /** Also end a recurring job's schedule once the run has stopped. */
  stopSchedule: boolean;
  /** Only the run of this lease (the overlap policy's aborts are fenced on the run they meant). */
  leaseGeneration?: number;
}

export type AbortResult =
  | {
      kind: 'requested';
      runId: number | null;
      leaseGeneration: number;
      /** The agent holding the lease. */
      leaseOwner: string | null;
      /** The first requester (an abort asked twice keeps the first). */
      requestedBy: string | null;
      requestedAt: Date;
      stopSchedule: boolean;
    }
  /** Nothing is running: the job is in `state`. */
  | { kind: 'not-running'; state: string }
  | { kind: 'not-found' };

const ABORT_SQL = `
WITH requested AS (
  UPDATE jobs j SET
    abort_requested_at = coalesce(j.abort_requested_at, ${NOW(1)}),
    abort_requested_by = CASE WHEN j.abort_requested_at IS NULL THEN $4 ELSE j.abort_requested_by END,
    abort_stop_schedule = j.abort_stop_schedule OR $5,
    updated_at = ${NOW(1)}
  WHERE j.id = $2 AND j.namespace = $3 AND j.state = 'CLAIMED' AND ($6::bigint IS NULL OR j.lease_generation = $6)
  RETURNING j.id, j.lease_generation, j.lease_owner, j.abort_requested_at, j.abort_requested_by, j.abort_stop_schedule, j.run_id
)
SELECT q.*,
  pg_notify('${ABORT_CHANNEL}', q.id || ':' || q.lease_generation)::text AS notified
FROM requested q`;

export async function requestAbort(
  pool: Pool,
  namespace: string,
  jobId: string,
  input: AbortRequestInput,
  now?: Date,
): Promise<AbortResult> {
  if (!isJobId(jobId)) return { kind: 'not-found' };
  const { rows } = await pool.query(ABORT_SQL, [now ?? null, jobId, namespace, input.by, input.stopSchedule, input.leaseGeneration ?? null]);
  const row = rows[0];
  if (row !== undefined) {
    return {
      kind: 'requested',
      runId: row.run_id === null ? null : Number(row.run_id),
      leaseGeneration: Number(row.lease_generation),
      leaseOwner: row.lease_owner,
      requestedBy: row.abort_requested_by,
      requestedAt: row.abort_requested_at,
      stopSchedule: row.abort_stop_schedule,
    };
  }
  const current = await pool.query('SELECT state FROM jobs WHERE id = $1 AND namespace = $2', [jobId, namespace]);
  if (current.rows[0] === undefined) return { kind: 'not-found' };
  return { kind: 'not-running', state: current.rows[0].state };
}
