/**
 * Creating, reading and listing jobs (query builder). State changes after
 * creation live in lease/, not here.
 *
 * Ids are UUIDv7: time-ordered, so listing pages in creation order with a
 * keyset on the id alone, and new rows land at the right edge of the index.
 */
import { and, asc, count, eq, gt, lte, sql, type SQL } from 'drizzle-orm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { firstOccurrence, type CronSchedule, type MisfirePolicy, type OverlapPolicy } from '@kairos/schedule';
import { v7 as uuidv7 } from 'uuid';
import { isJobId } from './lease';
import { storeCall } from './pg-errors';
import { jobs } from './schema';
import { NO_JOB_RETRY, startOf, type JobRetry } from './settle';

export type JobState = 'DUE' | 'CLAIMED' | 'COMPLETED' | 'DEAD' | 'PAUSED' | 'CANCELLED';
export const JOB_STATES: readonly JobState[] = ['DUE', 'CLAIMED', 'COMPLETED', 'DEAD', 'PAUSED', 'CANCELLED'];

/** A job as the API shows it. */
export interface JobRecord {
  id: string;
  namespace: string;
  name: string | null;
  task: string;
  schedule: string | null;
  runAt: Date | null;
  timezone: string;
  payload: unknown;
  state: JobState;
  /** The schedule occurrence the pending or running attempt serves. */
  occurrenceAt: Date | null;
  nextRunAt: Date | null;
  leaseUntil: Date | null;
  leaseOwner: string | null;
  leaseGeneration: number;
  attempt: number;
  maxAttempts: number;
  timeoutMs: number | null;
  misfirePolicy: MisfirePolicy;
  idempotencyKey: string | null;
  /** An abort of the running run that has not settled yet (POST /jobs/{id}/abort); null otherwise. */
  abort: { requestedAt: Date; requestedBy: string | null; stopSchedule: boolean } | null;
  /** The job's own retry policy; null fields take the coordinator's defaults. */
  retry: JobRetry;
  /** A recurring job's occurrences start up to this much later, fixed per occurrence. */
  startJitterMs: number;
  pauseOnFailure: boolean;
  /** Why the job was paused automatically (pauseOnFailure); null otherwise. */
  pausedReason: string | null;
  /** Grows by one on every edit: the ETag. */
  version: number;
  overlapPolicy: OverlapPolicy;
  /** catch-up: missed occurrences older than this are skipped; null: no bound. */
  catchupWindowMs: number | null;
  /** A backfill in progress: occurrences up to `through` (null: only the current one) run, then the schedule resumes at `resumeAt`. */
  backfill: { through: Date | null; resumeAt: Date } | null;
  createdAt: Date;
  updatedAt: Date;
}

/** A validated create request (the API layer validates; the store trusts these types). */
export interface NewJob {
  namespace: string;
  name?: string | null;
  task: string;
  /** Exactly one of `cron` and `runAt`. */
  cron?: CronSchedule | null;
  runAt?: Date | null;
  payload: unknown;
  maxAttempts: number;
  timeoutMs?: number | null;
  misfirePolicy: MisfirePolicy;
  idempotencyKey?: string | null;
  /** Digest of the normalised request, compared when the idempotency key repeats. */
  requestDigest?: string | null;
  /** W3C traceparent its runs' spans descend from (validated by the caller). */
  traceParent?: string | null;
  retry?: JobRetry;
  startJitterMs?: number;
  pauseOnFailure?: boolean;
  overlapPolicy?: OverlapPolicy;
  catchupWindowMs?: number | null;
}

export type CreateResult =
  | { kind: 'created'; job: JobRecord }
  | { kind: 'existing'; job: JobRecord }
  | { kind: 'conflict'; jobId: string };

/** A createMany answer: the job made, the one an identical earlier request made, or the one holding the key. */
export interface CreatedJobId {
  kind: 'created' | 'existing' | 'conflict';
  jobId: string;
}

export interface JobFilter {
  state?: JobState;
  task?: string;
  /** Only jobs whose name starts with this (case-sensitive; `%` and `_` are literal). */
  namePrefix?: string;
  /** Page size, 1..500 (callers validate). */
  limit: number;
  /** The last id of the previous page. */
  after?: string;
}

export interface JobPage {
  jobs: JobRecord[];
  /** Id to pass as `after` for the next page; null on the last page. */
  nextAfter: string | null;
}

/** The most jobs one createMany call takes (the API's batch limit). */
export const MAX_CREATE_BATCH = 1000;

export interface JobQueries {
  create(input: NewJob, now?: Date): Promise<CreateResult>;
  /**
   * Creates up to MAX_CREATE_BATCH jobs in one transaction; answers each input
   * in order, as `create` would, by job id only (a batch's caller reads jobs back
   * if it needs them).
   */
  createMany(inputs: readonly NewJob[], now?: Date): Promise<CreatedJobId[]>;
  get(namespace: string, id: string): Promise<JobRecord | null>;
  list(namespace: string, filter: JobFilter): Promise<JobPage>;
  /** DUE jobs whose next_run_at is within `horizonMs` of the database clock (the autoscaling signal). */
  countDueWithin(horizonMs: number): Promise<number>;
  /**
   * Work for agents, per namespace and task: DUE jobs due within `horizonMs`
   * (or late) plus CLAIMED jobs (running or about to), by the database clock.
   * The 100 busiest pairs. What autoscaling follows (`kairos_jobs_demand`).
   */
  demand(horizonMs: number): Promise<Array<{ namespace: string; task: string; jobs: number }>>;
  /**
   * Milliseconds from the database's now until the earliest DUE job of these
   * tasks (negative: already due), or null when none waits. A duration, so the
   * dispatcher's timer never compares its clock with the database's.
   */
  msUntilNextDue(tasks: readonly string[]): Promise<number | null>;
  /**
   * Overdue work, for alerting: how late the oldest DUE job is (ms, database
   * clock; null when none is late), and the namespaces and tasks with DUE jobs
   * later than `graceMs` (at most 100, the most overdue first).
   */
  overdue(graceMs: number): Promise<{ oldestMs: number | null; tasks: Array<{ namespace: string; task: string; jobs: number }> }>;
}

export function jobQueries(db: NodePgDatabase): JobQueries {
  const queries = unwrappedJobQueries(db);
  // Every read reports database trouble as StoreUnavailableError (the API's 503), like the writes.
  return {
    create: (input, now) => storeCall('jobs.create', () => queries.create(input, now)),
    createMany: (inputs, now) =>
      inputs.length > MAX_CREATE_BATCH
        ? Promise.reject(new RangeError(`jobs.createMany takes at most ${MAX_CREATE_BATCH} jobs, not ${inputs.length}`))
        : storeCall('jobs.createMany', () => queries.createMany(inputs, now)),
    get: (namespace, id) => storeCall('jobs.get', () => queries.get(namespace, id)),
    list: (namespace, filter) => storeCall('jobs.list', () => queries.list(namespace, filter)),
    countDueWithin: (horizonMs) => storeCall('jobs.countDueWithin', () => queries.countDueWithin(horizonMs)),
    demand: (horizonMs) => storeCall('jobs.demand', () => queries.demand(horizonMs)),
    msUntilNextDue: (tasks) => storeCall('jobs.msUntilNextDue', () => queries.msUntilNextDue(tasks)),
    overdue: (graceMs) => storeCall('jobs.overdue', () => queries.overdue(graceMs)),
  };
}


function unwrappedJobQueries(db: NodePgDatabase): JobQueries {
  return {
    create: (input, now) => create(db, input, now),
    createMany: (inputs, now) => createMany(db, inputs, now),
    async get(namespace, id) {
      if (!isJobId(id)) return null;
      const rows = await db
        .select()
        .from(jobs)
        .where(and(eq(jobs.namespace, namespace), eq(jobs.id, id)));
      return rows[0] ? toJobRecord(rows[0]) : null;
    },
    async list(namespace, filter) {
      const conditions: SQL[] = [eq(jobs.namespace, namespace)];
      if (filter.state) conditions.push(eq(jobs.state, filter.state));
      if (filter.task) conditions.push(eq(jobs.task, filter.task));
      if (filter.namePrefix) conditions.push(sql`starts_with(${jobs.name}, ${filter.namePrefix})`);
      if (filter.after !== undefined) {
        if (!isJobId(filter.after)) return { jobs: [], nextAfter: null };
        conditions.push(gt(jobs.id, filter.after));
      }
      const rows = await db
        .select()
        .from(jobs)
        .where(and(...conditions))
        .orderBy(asc(jobs.id))
        .limit(filter.limit + 1);
      const page = rows.slice(0, filter.limit).map(toJobRecord);
      return { jobs: page, nextAfter: rows.length > filter.limit ? page[page.length - 1]!.id : null };
    },
    async countDueWithin(horizonMs) {
      const rows = await db
        .select({ n: count() })
        .from(jobs)
        .where(
          and(
            eq(jobs.state, 'DUE'),
            lte(jobs.nextRunAt, sql`now() + make_interval(secs => ${horizonMs}::double precision / 1000)`),
          ),
        );
      return rows[0]?.n ?? 0;
    },
    async demand(horizonMs) {
      // Both partial indexes (DUE by next_run_at, CLAIMED by lease_until) cover the two halves.
      const result = await db.execute<{ namespace: string; task: string; jobs: string | number }>(
        sql`SELECT namespace, task, count(*) AS jobs FROM jobs
            WHERE (state = 'DUE' AND next_run_at <= now() + make_interval(secs => ${horizonMs}::double precision / 1000))
               OR state = 'CLAIMED'
            GROUP BY namespace, task ORDER BY count(*) DESC, namespace, task LIMIT 100`,
      );
      return result.rows.map((row) => ({ namespace: row.namespace, task: row.task, jobs: Number(row.jobs) }));
    },
    async msUntilNextDue(tasks) {
      if (tasks.length === 0) return null;
      const result = await db.execute<{ ms: string | number | null }>(
        sql`SELECT floor(extract(epoch FROM (min(next_run_at) - now())) * 1000) AS ms
            FROM jobs WHERE state = 'DUE' AND task = ANY(${sql.param([...tasks])}::text[])
              AND (held_until IS NULL OR held_until <= now())`,
      );
      const ms = result.rows[0]?.ms;
      return ms === null || ms === undefined ? null : Number(ms);
    },
    async overdue(graceMs) {
      // Both read the partial index on DUE jobs by next_run_at, and only its late end.
      const oldest = await db.execute<{ ms: string | number | null }>(
        sql`SELECT floor(extract(epoch FROM (now() - min(next_run_at))) * 1000) AS ms FROM jobs WHERE state = 'DUE' AND next_run_at < now()`,
      );
      const tasks = await db.execute<{ namespace: string; task: string; jobs: string | number }>(
        sql`SELECT namespace, task, count(*) AS jobs FROM jobs
            WHERE state = 'DUE' AND next_run_at < now() - make_interval(secs => ${graceMs}::double precision / 1000)
            GROUP BY namespace, task ORDER BY min(next_run_at) LIMIT 100`,
      );
      const ms = oldest.rows[0]?.ms;
      return {
        oldestMs: ms === null || ms === undefined ? null : Math.max(0, Number(ms)),
        tasks: tasks.rows.map((row) => ({ namespace: row.namespace, task: row.task, jobs: Number(row.jobs) })),
      };
    },
  };
}

/** The row a validated create request becomes at `clock`, with its new id. */
function newJobRow(input: NewJob, clock: Date): typeof jobs.$inferInsert {
  const cron = input.cron ?? null;
  const runAt = input.runAt ?? null;
  if ((cron === null) === (runAt === null)) throw new Error('jobs.create needs exactly one of cron and runAt');
  const occurrence = cron ? firstOccurrence(cron, clock) : runAt!;
  const id = uuidv7();
  const retry = input.retry ?? NO_JOB_RETRY;
  const startJitterMs = cron ? (input.startJitterMs ?? 0) : 0;
  return {
    id,
    namespace: input.namespace,
    name: input.name ?? null,
    task: input.task,
    schedule: cron?.expression ?? null,
    runAt,
    timezone: cron?.timezone ?? 'UTC',
    payload: input.payload ?? {},
    state: 'DUE',
    occurrenceAt: occurrence,
    nextRunAt: cron ? startOf(id, occurrence, startJitterMs) : occurrence,
    maxAttempts: input.maxAttempts,
    retryInitialMs: retry.initialMs,
    retryMaxMs: retry.maxMs,
    retryMultiplier: retry.multiplier,
    retryJitter: retry.jitter,
    startJitterMs,
    pauseOnFailure: input.pauseOnFailure ?? false,
    overlapPolicy: input.overlapPolicy ?? 'skip',
    catchupWindowMs: input.catchupWindowMs ?? null,
    timeoutMs: input.timeoutMs ?? null,
    misfirePolicy: input.misfirePolicy,
    idempotencyKey: input.idempotencyKey ?? null,
    requestDigest: input.requestDigest ?? null,
    traceParent: input.traceParent ?? null,
    createdAt: clock,
    updatedAt: clock,
  };
}

/** A request whose idempotency key is taken: the same request again (existing) or another one (conflict). */
function repeatOf(input: NewJob, holder: JobRow): CreateResult {
  return holder.requestDigest === (input.requestDigest ?? null)
    ? { kind: 'existing', job: toJobRecord(holder) }
    : { kind: 'conflict', jobId: holder.id };
}

async function create(db: NodePgDatabase, input: NewJob, now?: Date): Promise<CreateResult> {
  const clock = now ?? (await databaseNow(db));
  const inserted = await db
    .insert(jobs)
    .values(newJobRow(input, clock))
    .onConflictDoNothing({
      target: [jobs.namespace, jobs.idempotencyKey],
      where: sql`idempotency_key IS NOT NULL`,
    })
    .returning();
  if (inserted[0]) return { kind: 'created', job: toJobRecord(inserted[0]) };

  const existing = await db
    .select()
    .from(jobs)
    .where(and(eq(jobs.namespace, input.namespace), eq(jobs.idempotencyKey, input.idempotencyKey ?? '')));
  const row = existing[0];
  if (!row) throw new Error('jobs.create: idempotency key conflicted but no row holds it');
  return repeatOf(input, row);
}

/**
 * Many creates in one transaction: one INSERT of every row (columns as arrays
 * through unnest, so the statement has 27 parameters whatever the batch size,
 * and no per-row query building), then one read of the rows holding the keys
 * that were already taken. Each input is answered as `create` would answer it
 * alone, in order, by job id: a key repeated within the batch is an idempotent
 * repeat of its first use (or a conflict with it).
 */
async function createMany(db: NodePgDatabase, inputs: readonly NewJob[], now?: Date): Promise<CreatedJobId[]> {
  if (inputs.length === 0) return [];
  return db.transaction(async (tx) => {
    const clock = now ?? (await databaseNow(tx));
    const rows = inputs.map((input) => newJobRow(input, clock));
    const column = <T>(pick: (row: (typeof rows)[number]) => T) => sql.param(rows.map(pick));
    const iso = (date: Date | null | undefined) => (date ? date.toISOString() : null);
    const inserted = await tx.execute<{ id: string }>(sql`
      INSERT INTO jobs (id, namespace, name, task, schedule, run_at, timezone, payload, state, occurrence_at, next_run_at,
                        max_attempts, retry_initial_ms, retry_max_ms, retry_multiplier, retry_jitter, start_jitter_ms,
                        pause_on_failure, overlap_policy, catchup_window_ms, timeout_ms, misfire_policy, idempotency_key,
                        request_digest, trace_parent, created_at, updated_at)
      SELECT id, namespace, name, task, schedule, run_at, timezone, payload::jsonb, 'DUE', occurrence_at, next_run_at,
             max_attempts, retry_initial_ms, retry_max_ms, retry_multiplier, retry_jitter, start_jitter_ms,
             pause_on_failure, overlap_policy::kairos_overlap_policy, catchup_window_ms, timeout_ms,
             misfire_policy::kairos_misfire_policy, idempotency_key, request_digest, trace_parent, ${clock.toISOString()}::timestamptz,
             ${clock.toISOString()}::timestamptz
      FROM unnest(
        ${column((r) => r.id)}::uuid[], ${column((r) => r.namespace)}::text[], ${column((r) => r.name)}::text[],
        ${column((r) => r.task)}::text[], ${column((r) => r.schedule)}::text[], ${column((r) => iso(r.runAt))}::timestamptz[],
        ${column((r) => r.timezone)}::text[], ${column((r) => JSON.stringify(r.payload))}::text[],
        ${column((r) => iso(r.occurrenceAt))}::timestamptz[], ${column((r) => iso(r.nextRunAt))}::timestamptz[],
        ${column((r) => r.maxAttempts)}::int[], ${column((r) => r.retryInitialMs)}::int[], ${column((r) => r.retryMaxMs)}::int[],
        ${column((r) => r.retryMultiplier)}::float8[], ${column((r) => r.retryJitter)}::float8[],
        ${column((r) => r.startJitterMs)}::int[], ${column((r) => r.pauseOnFailure)}::bool[], ${column((r) => r.overlapPolicy)}::text[],
        ${column((r) => r.catchupWindowMs)}::bigint[], ${column((r) => r.timeoutMs)}::int[], ${column((r) => r.misfirePolicy)}::text[],
        ${column((r) => r.idempotencyKey)}::text[], ${column((r) => r.requestDigest)}::text[], ${column((r) => r.traceParent)}::text[]
      ) AS u(id, namespace, name, task, schedule, run_at, timezone, payload, occurrence_at, next_run_at, max_attempts,
             retry_initial_ms, retry_max_ms, retry_multiplier, retry_jitter, start_jitter_ms, pause_on_failure,
             overlap_policy, catchup_window_ms, timeout_ms, misfire_policy, idempotency_key, request_digest, trace_parent)
      ON CONFLICT (namespace, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
      RETURNING id`);
    const created = new Set(inserted.rows.map((row) => row.id));
    const refused = inputs.filter((_input, i) => !created.has(rows[i]!.id!));
    const holders = new Map<string, { id: string; requestDigest: string | null }>();
    // One read per namespace (the API sends one), by the unique index on (namespace, idempotency_key).
    const keysByNamespace = new Map<string, string[]>();
    for (const input of refused) {
      const keys = keysByNamespace.get(input.namespace) ?? [];
      keys.push(input.idempotencyKey ?? '');
      keysByNamespace.set(input.namespace, keys);
    }
    for (const [namespace, keys] of keysByNamespace) {
      const found = await tx
        .select({ id: jobs.id, idempotencyKey: jobs.idempotencyKey, requestDigest: jobs.requestDigest })
        .from(jobs)
        .where(and(eq(jobs.namespace, namespace), sql`${jobs.idempotencyKey} = ANY(${sql.param(keys)}::text[])`));
      for (const row of found) holders.set(`${namespace}\u0000${row.idempotencyKey}`, row);
    }
    return inputs.map((input, i): CreatedJobId => {
      const id = rows[i]!.id!;
      if (created.has(id)) return { kind: 'created', jobId: id };
      const holder = holders.get(`${input.namespace}\u0000${input.idempotencyKey ?? ''}`);
      if (!holder) throw new Error('jobs.createMany: idempotency key conflicted but no row holds it');
      return { kind: holder.requestDigest === (input.requestDigest ?? null) ? 'existing' : 'conflict', jobId: holder.id };
    });
  });
}

async function databaseNow(db: Pick<NodePgDatabase, 'execute'>): Promise<Date> {
  const result = await db.execute<{ now: Date | string }>(sql`SELECT now() AS now`);
  const value = result.rows[0]?.now;
  return value instanceof Date ? value : new Date(String(value));
}

type JobRow = typeof jobs.$inferSelect;

function toJobRecord(row: JobRow): JobRecord {
  return {
    id: row.id,
    namespace: row.namespace,
    name: row.name,
    task: row.task,
    schedule: row.schedule,
    runAt: row.runAt,
    timezone: row.timezone,
    payload: row.payload,
    state: row.state,
    occurrenceAt: row.occurrenceAt,
    nextRunAt: row.nextRunAt,
    leaseUntil: row.leaseUntil,
    leaseOwner: row.leaseOwner,
    leaseGeneration: row.leaseGeneration,
    attempt: row.attempt,
    maxAttempts: row.maxAttempts,
    timeoutMs: row.timeoutMs,
    misfirePolicy: row.misfirePolicy,
    idempotencyKey: row.idempotencyKey,
    abort:
      row.abortRequestedAt === null
        ? null
        : { requestedAt: row.abortRequestedAt, requestedBy: row.abortRequestedBy, stopSchedule: row.abortStopSchedule },
    retry: { initialMs: row.retryInitialMs, maxMs: row.retryMaxMs, multiplier: row.retryMultiplier, jitter: row.retryJitter },
    startJitterMs: row.startJitterMs,
    pauseOnFailure: row.pauseOnFailure,
    pausedReason: row.pausedReason,
    version: row.version,
    overlapPolicy: row.overlapPolicy,
    catchupWindowMs: row.catchupWindowMs,
    backfill: row.backfillResumeAt === null ? null : { through: row.runThrough, resumeAt: row.backfillResumeAt },
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
