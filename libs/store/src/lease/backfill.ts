/**
 * Backfill: the occurrences of a recurring job's schedule in a past range
 * [from, to) run in order, one at a time, each as a run of the job with its
 * own scheduledFor. It reuses the planned stretch of the settlement
 * (settle.ts): the job moves to the range's first occurrence, due now, with
 * `run_through` at its last and `next_reason` 'backfill'; every settlement
 * continues the stretch. The regular occurrence the job was waiting for is kept
 * in `backfill_resume_at`; when the stretch ends the job resumes from it, and
 * the regular occurrences that passed meanwhile follow its overlap policy
 * (they came due while the job was busy).
 *
 * Only a DUE recurring job starts a backfill (a running one is asked again when
 * its run has ended; a paused one when resumed; one with late runs a policy
 * planned, once they have run); one backfill at a time.
 * Cancelling puts a waiting job back on its regular occurrence at once, and
 * lets a running backfill run finish first.
 */
import type { Pool } from 'pg';
import { occurrencesBetween } from '@kairos/schedule';
import { startOf } from '../settle';
import { isJobId } from './refs';
import { inTransaction, NOW } from './sql';

/** Most occurrences one backfill runs. */
export const MAX_BACKFILL_OCCURRENCES = 10_000;

export type BackfillResult =
  | { kind: 'started'; first: Date; last: Date; count: number; resumeAt: Date }
  | { kind: 'not-found' }
  /** The request cannot apply (`field` names why; `state` is the job's). */
  | { kind: 'refused'; field: string; message: string; state: string; conflict: boolean };

export type CancelBackfillResult = { kind: 'cancelled'; finishing: boolean } | { kind: 'none' } | { kind: 'not-found' };

export async function startBackfill(
  pool: Pool,
  namespace: string,
  jobId: string,
  range: { from: Date; to: Date },
  now?: Date,
): Promise<BackfillResult> {
  if (!isJobId(jobId)) return { kind: 'not-found' };
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `SELECT state, schedule, timezone, occurrence_at, backfill_resume_at, next_reason, ${NOW(1)} AS now
       FROM jobs WHERE id = $2 AND namespace = $3 FOR UPDATE`,
      [now ?? null, jobId, namespace],
    );
    const row = rows[0];
    if (row === undefined) return { kind: 'not-found' };
    const state = row.state as string;
    const refuse = (field: string, message: string, conflict = true): BackfillResult => ({ kind: 'refused', field, message, state, conflict });
    if (row.schedule === null) return refuse('jobId', 'backfill applies to recurring jobs (schedule); this one is one-off');
    if (row.backfill_resume_at !== null) return refuse('jobId', 'a backfill of this job is already running; cancel it first (DELETE /jobs/{id}/backfill)');
    if (row.next_reason !== null) {
      return refuse('jobId', `the job has late runs pending (${row.next_reason as string}); ask again once they have run`);
    }
    if (state !== 'DUE') {
      const why = state === 'CLAIMED' ? 'the job is running; ask again once the run has ended' : state === 'PAUSED' ? 'the job is paused; resume it first' : `the job is ${state}`;
      return refuse('jobId', `cannot start a backfill: ${why}`);
    }
    const dbNow = row.now as Date;
    if (range.to.getTime() > dbNow.getTime()) return refuse('to', `to must not be in the future (now is ${dbNow.toISOString()})`, false);
    const schedule = { expression: row.schedule as string, timezone: row.timezone as string };
    const span = occurrencesBetween(schedule, range.from, range.to, MAX_BACKFILL_OCCURRENCES + 1);
    if (span === null) return refuse('from', `the schedule has no occurrence in [${range.from.toISOString()}, ${range.to.toISOString()})`, false);
    if (span.count > MAX_BACKFILL_OCCURRENCES) {
      return refuse('to', `the range holds more than ${MAX_BACKFILL_OCCURRENCES} occurrences; backfill it in parts`, false);
    }
    await client.query(
      `UPDATE jobs SET backfill_resume_at = occurrence_at, occurrence_at = $2, next_run_at = $3, attempt = 0,
         run_through = $4, next_reason = 'backfill', busy_since = NULL, updated_at = $3
       WHERE id = $1`,
      [jobId, span.first, dbNow, span.last.getTime() > span.first.getTime() ? span.last : null],
    );
    return { kind: 'started', first: span.first, last: span.last, count: span.count, resumeAt: row.occurrence_at as Date };
  });
}

export async function cancelBackfill(pool: Pool, namespace: string, jobId: string, now?: Date): Promise<CancelBackfillResult> {
  if (!isJobId(jobId)) return { kind: 'not-found' };
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `SELECT state, backfill_resume_at, start_jitter_ms, ${NOW(1)} AS now FROM jobs WHERE id = $2 AND namespace = $3 FOR UPDATE`,
      [now ?? null, jobId, namespace],
    );
    const row = rows[0];
    if (row === undefined) return { kind: 'not-found' };
    const resumeAt = row.backfill_resume_at as Date | null;
    if (resumeAt === null) return { kind: 'none' };
    if (row.state === 'CLAIMED') {
      // The running backfill run finishes; its settlement ends the stretch and resumes the schedule.
      await client.query('UPDATE jobs SET run_through = NULL, updated_at = $2 WHERE id = $1', [jobId, row.now]);
      return { kind: 'cancelled', finishing: true };
    }
    await client.query(
      `UPDATE jobs SET occurrence_at = $2, next_run_at = CASE WHEN state IN ('DUE', 'PAUSED') THEN $3::timestamptz END, attempt = 0,
         run_through = NULL, next_reason = NULL, busy_since = NULL, backfill_resume_at = NULL, updated_at = $4
       WHERE id = $1`,
      [jobId, resumeAt, startOf(jobId, resumeAt, row.start_jitter_ms as number), row.now],
    );
    return { kind: 'cancelled', finishing: false };
  });
}
