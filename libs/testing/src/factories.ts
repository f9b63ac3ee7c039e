/**
 * Row factories: insert a job or run directly in any state ("CLAIMED, lease
 * expired 5 s ago, generation 3"), with defaults for everything else. Times are
 * given relative to a pinned `now` so tests read as timelines.
 */
import type { Pool } from 'pg';
import { v7 as uuidv7 } from 'uuid';

export interface JobFixture {
  id?: string;
  namespace?: string;
  name?: string | null;
  task?: string;
  schedule?: string | null;
  runAt?: Date | null;
  timezone?: string;
  payload?: unknown;
  state?: 'DUE' | 'CLAIMED' | 'COMPLETED' | 'DEAD' | 'PAUSED' | 'CANCELLED';
  occurrenceAt?: Date | null;
  nextRunAt?: Date | null;
  leaseUntil?: Date | null;
  leaseOwner?: string | null;
  leaseGeneration?: number;
  attempt?: number;
  maxAttempts?: number;
  timeoutMs?: number | null;
  misfirePolicy?: 'fire-once' | 'skip';
}

/** Who holds the lease of a CLAIMED job insertJob made (unless it names a leaseOwner): agent-fixture, no token. */
export const FIXTURE_HOLDER: { owner: string; tokenId: string | null } = { owner: 'agent-fixture', tokenId: null };

/** Inserts a job; a CLAIMED job also gets its run (an id reserved, a start), as a real claim would (decision 0027). */
export async function insertJob(pool: Pool, fixture: JobFixture = {}): Promise<string> {
  const id = fixture.id ?? uuidv7();
  const state = fixture.state ?? 'DUE';
  const schedule = fixture.schedule ?? null;
  const runAt = schedule === null ? (fixture.runAt ?? new Date(0)) : null;
  const occurrenceAt = fixture.occurrenceAt !== undefined ? fixture.occurrenceAt : (runAt ?? fixture.nextRunAt ?? new Date(0));
  const nextRunAt = fixture.nextRunAt !== undefined ? fixture.nextRunAt : state === 'DUE' ? occurrenceAt : null;
  const claimed = state === 'CLAIMED';
  const generation = fixture.leaseGeneration ?? (claimed ? 1 : 0);
  const attempt = fixture.attempt ?? (claimed ? 1 : 0);
  await pool.query(
    `INSERT INTO jobs (id, namespace, name, task, schedule, run_at, timezone, payload, state, occurrence_at,
       next_run_at, lease_until, lease_owner, lease_generation, attempt, max_attempts, timeout_ms, misfire_policy,
       run_id, run_started_at)
     VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,
       CASE WHEN $19 THEN nextval('ended_runs_id_seq') END, CASE WHEN $19 THEN now() END)`,
    [
      id,
      fixture.namespace ?? 'default',
      fixture.name ?? null,
      fixture.task ?? 'noop',
      schedule,
      runAt,
      fixture.timezone ?? 'UTC',
      JSON.stringify(fixture.payload ?? {}),
      state,
      occurrenceAt,
      nextRunAt,
      claimed ? (fixture.leaseUntil ?? new Date(Date.now() + 60_000)) : (fixture.leaseUntil ?? null),
      claimed ? (fixture.leaseOwner ?? 'agent-fixture') : (fixture.leaseOwner ?? null),
      generation,
      attempt,
      fixture.maxAttempts ?? 3,
      fixture.timeoutMs ?? null,
      fixture.misfirePolicy ?? 'fire-once',
      claimed,
    ],
  );
  return id;
}

/** Inserts many DUE one-off jobs in one statement (for spikes and index-size tests). */
export async function insertDueJobs(
  pool: Pool,
  options: { count: number; nextRunAt: Date; spreadMs?: number; task?: string },
): Promise<void> {
  await pool.query(
    `INSERT INTO jobs (id, task, run_at, occurrence_at, next_run_at, state)
     SELECT gen_random_uuid(), $2, t, t, t, 'DUE'
     FROM (SELECT $3::timestamptz + make_interval(secs => (g % greatest($4::bigint, 1)) / 1000.0) AS t
           FROM generate_series(1, $1) g) s`,
    [options.count, options.task ?? 'noop', options.nextRunAt, options.spreadMs ?? 0],
  );
}

/** A job's row as stored (every column), or undefined when there is none. */
export async function jobRow(pool: Pool, id: string): Promise<any> {
  return (await pool.query('SELECT * FROM jobs WHERE id = $1', [id])).rows[0];
}

/**
 * A job's runs (every column), oldest first: the rows of ended runs and, for a
 * CLAIMED job, its RUNNING run (the runs view; docs/decisions/0027).
 */
export async function runRows(pool: Pool, jobId: string): Promise<any[]> {
  return (await pool.query('SELECT * FROM runs WHERE job_id = $1 ORDER BY id', [jobId])).rows;
}

export function at(base: Date, offsetMs: number): Date {
  return new Date(base.getTime() + offsetMs);
}
