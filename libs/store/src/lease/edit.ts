/**
 * Editing a job in place (PATCH /jobs/{id}): one locked read-modify-write, so
 * an edit and a claim, a settlement or another edit never interleave.
 *
 * - History stays on the same id; `version` grows by one per edit and is the
 *   optimistic-concurrency check (`expectedVersion`, the REST If-Match).
 * - A DUE or PAUSED job whose timing changed (schedule, timezone, runAt, or a
 *   switch between one-off and recurring) is rescheduled from now: its pending
 *   occurrence becomes the first of the new timing at or after now, with a
 *   fresh attempt budget. A new start jitter moves a waiting occurrence's start.
 * - A CLAIMED job keeps running as it was claimed (payload, timeout); the edit
 *   applies from the next claim. A schedule change is recorded in
 *   `rescheduled_at`, from which the settlement plans the next occurrence.
 *   Its runAt cannot change while it runs.
 * - A finished job (COMPLETED, DEAD, CANCELLED) can be edited (e.g. before a
 *   trigger revives a DEAD one) but is not revived by it.
 */
import type { Pool } from 'pg';
import { firstOccurrence, type CronSchedule, type MisfirePolicy, type OverlapPolicy } from '@kairos/schedule';
import { startOf, type JobRetry } from '../settle';
import { isJobId } from './refs';
import { inTransaction, NOW } from './sql';

/** Fields to change; absent ones stay as they are. */
export interface JobEdit {
  /** Make (or keep) the job recurring on this schedule. */
  schedule?: CronSchedule;
  /** Make (or keep) the job one-off at this instant. */
  runAt?: Date;
  payload?: Record<string, unknown>;
  name?: string | null;
  maxAttempts?: number;
  timeoutMs?: number | null;
  misfirePolicy?: MisfirePolicy;
  overlapPolicy?: OverlapPolicy;
  /** null: no window (catch-up runs every missed occurrence). */
  catchupWindowMs?: number | null;
  retry?: JobRetry;
  startJitterMs?: number;
  pauseOnFailure?: boolean;
}

export type EditResult =
  | { kind: 'updated'; version: number; appliesFrom: 'now' | 'next-claim' }
  | { kind: 'not-found' }
  | { kind: 'version-mismatch'; version: number }
  /** The edit cannot apply to the job as it is (`field` names why). */
  | { kind: 'refused'; field: string; message: string; state: string };

export async function editJob(
  pool: Pool,
  namespace: string,
  jobId: string,
  edit: JobEdit,
  options: { expectedVersion?: number | undefined; now?: Date | undefined } = {},
): Promise<EditResult> {
  if (!isJobId(jobId)) return { kind: 'not-found' };
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query(
      `SELECT id, state, schedule, timezone, run_at, occurrence_at, next_run_at, attempt, version, start_jitter_ms,
              pause_on_failure, ${NOW(1)} AS now
       FROM jobs WHERE id = $2 AND namespace = $3 FOR UPDATE`,
      [options.now ?? null, jobId, namespace],
    );
    const row = rows[0];
    if (row === undefined) return { kind: 'not-found' };
    if (options.expectedVersion !== undefined && row.version !== options.expectedVersion) {
      return { kind: 'version-mismatch', version: row.version };
    }
    const now = row.now as Date;
    const state = row.state as string;
    const claimed = state === 'CLAIMED';
    const waiting = state === 'DUE' || state === 'PAUSED';

    const recurring = edit.schedule !== undefined ? true : edit.runAt !== undefined ? false : row.schedule !== null;
    const refuse = (field: string, message: string): EditResult => ({ kind: 'refused', field, message, state });
    if (edit.runAt !== undefined && claimed) {
      return refuse('runAt', 'runAt cannot change while the job runs; change it once the run has ended, or abort the run');
    }
    if (edit.schedule !== undefined && claimed && row.schedule === null) {
      return refuse('schedule', 'a running one-off job cannot become recurring; change it once the run has ended');
    }
    const startJitterMs = recurring ? (edit.startJitterMs ?? row.start_jitter_ms) : 0;
    if (!recurring && (edit.startJitterMs ?? 0) > 0) return refuse('jitterMs', 'jitterMs applies to recurring jobs (schedule) only');
    if (!recurring && edit.pauseOnFailure === true) return refuse('pauseOnFailure', 'pauseOnFailure applies to recurring jobs (schedule) only');

    const schedule = edit.schedule ?? (recurring ? { expression: row.schedule as string, timezone: row.timezone as string } : null);
    const runAt = edit.runAt ?? (recurring ? null : (row.run_at as Date));
    const timingChanged =
      edit.runAt !== undefined ||
      (edit.schedule !== undefined && (edit.schedule.expression !== row.schedule || edit.schedule.timezone !== row.timezone));

    let occurrenceAt = row.occurrence_at as Date | null;
    let nextRunAt = row.next_run_at as Date | null;
    let attempt = row.attempt as number;
    let rescheduled = false;
    let replanned = false;
    if (timingChanged && waiting) {
      occurrenceAt = schedule !== null ? firstOccurrence(schedule, now) : runAt!;
      nextRunAt = schedule !== null ? startOf(jobId, occurrenceAt, startJitterMs) : occurrenceAt;
      attempt = 0;
      replanned = true;
    } else if (timingChanged && claimed) {
      rescheduled = true;
    } else if (waiting && recurring && occurrenceAt !== null && attempt === 0 && startJitterMs !== row.start_jitter_ms) {
      nextRunAt = startOf(jobId, occurrenceAt, startJitterMs);
    }

    const set: Record<string, unknown> = {
      schedule: schedule?.expression ?? null,
      run_at: runAt,
      timezone: schedule?.timezone ?? 'UTC',
      occurrence_at: occurrenceAt,
      next_run_at: nextRunAt,
      attempt,
      start_jitter_ms: startJitterMs,
      pause_on_failure: recurring ? (edit.pauseOnFailure ?? row.pause_on_failure) : false,
    };
    if (edit.payload !== undefined) set.payload = JSON.stringify(edit.payload);
    if (edit.name !== undefined) set.name = edit.name;
    if (edit.maxAttempts !== undefined) set.max_attempts = edit.maxAttempts;
    if (edit.timeoutMs !== undefined) set.timeout_ms = edit.timeoutMs;
    if (edit.misfirePolicy !== undefined) set.misfire_policy = edit.misfirePolicy;
    if (edit.overlapPolicy !== undefined) set.overlap_policy = edit.overlapPolicy;
    if (edit.catchupWindowMs !== undefined) set.catchup_window_ms = edit.catchupWindowMs;
    if (replanned) {
      // A new timing starts a new plan: no stretch, nothing decided yet.
      set.run_through = null;
      set.decided_through = null;
      set.next_reason = null;
      set.busy_since = null;
      set.backfill_resume_at = null;
    }
    if (edit.retry !== undefined) {
      set.retry_initial_ms = edit.retry.initialMs;
      set.retry_max_ms = edit.retry.maxMs;
      set.retry_multiplier = edit.retry.multiplier;
      set.retry_jitter = edit.retry.jitter;
    }
    const names = Object.keys(set);
    const { rows: updated } = await client.query(
      `UPDATE jobs SET ${names.map((name, i) => `${name} = $${i + 3}`).join(', ')},
         rescheduled_at = ${rescheduled ? '$2' : 'rescheduled_at'}, held_until = NULL, version = version + 1, updated_at = $2
       WHERE id = $1 RETURNING version`,
      [jobId, now, ...names.map((name) => set[name])],
    );
    return { kind: 'updated', version: updated[0].version, appliesFrom: claimed ? 'next-claim' : 'now' };
  });
}
