/**
 * Drizzle table definitions, used by the query-builder modules (jobs.ts, runs.ts).
 * Not exported from the package: callers see the store's typed API only.
 *
 * The SQL migrations in ../migrations are the source of truth for the database;
 * `schema.pg.test.ts` checks that these definitions name the same columns.
 */
import { sql } from 'drizzle-orm';
import { bigint, boolean, doublePrecision, integer, jsonb, pgEnum, pgTable, pgView, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';

export const jobState = pgEnum('kairos_job_state', ['DUE', 'CLAIMED', 'COMPLETED', 'DEAD', 'PAUSED', 'CANCELLED']);
export const runOutcome = pgEnum('kairos_run_outcome', [
  'RUNNING',
  'SUCCEEDED',
  'FAILED',
  'TIMED_OUT',
  'LEASE_EXPIRED',
  'CANCELLED',
  'SKIPPED',
]);
export const misfirePolicy = pgEnum('kairos_misfire_policy', ['fire-once', 'skip', 'catch-up']);
export const overlapPolicy = pgEnum('kairos_overlap_policy', ['skip', 'buffer-one', 'buffer-all', 'cancel-other']);

const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const jobs = pgTable('jobs', {
  id: uuid('id').primaryKey().defaultRandom(),
  namespace: text('namespace').notNull().default('default'),
  name: text('name'),
  task: text('task').notNull(),
  schedule: text('schedule'),
  runAt: tstz('run_at'),
  timezone: text('timezone').notNull().default('UTC'),
  payload: jsonb('payload').notNull().default(sql`'{}'::jsonb`),
  state: jobState('state').notNull().default('DUE'),
  occurrenceAt: tstz('occurrence_at'),
  nextRunAt: tstz('next_run_at'),
  leaseUntil: tstz('lease_until'),
  leaseOwner: text('lease_owner'),
  // The agent token the lease was granted to (migration 0004); read and written only by the lease statements (src/lease/).
  leaseToken: uuid('lease_token'),
  leaseGeneration: bigint('lease_generation', { mode: 'number' }).notNull().default(sql`0`),
  attempt: integer('attempt').notNull().default(0),
  maxAttempts: integer('max_attempts').notNull().default(3),
  timeoutMs: integer('timeout_ms'),
  misfirePolicy: misfirePolicy('misfire_policy').notNull().default('fire-once'),
  idempotencyKey: text('idempotency_key'),
  requestDigest: text('request_digest'),
    /** W3C traceparent of the job's creation (migration 0013). */
    traceParent: text('trace_parent'),
  createdAt: tstz('created_at').notNull().defaultNow(),
  updatedAt: tstz('updated_at').notNull().defaultNow(),
  // An operator's abort of the running run (migration 0005); written by lease/abort.ts, cleared by every settlement.
  abortRequestedAt: tstz('abort_requested_at'),
  abortRequestedBy: text('abort_requested_by'),
  abortStopSchedule: boolean('abort_stop_schedule').notNull().default(false),
  // Per-job retry and start jitter, pause on failure, edit version (migration 0006).
  retryInitialMs: integer('retry_initial_ms'),
  retryMaxMs: integer('retry_max_ms'),
  retryMultiplier: doublePrecision('retry_multiplier'),
  retryJitter: doublePrecision('retry_jitter'),
  startJitterMs: integer('start_jitter_ms').notNull().default(0),
  pauseOnFailure: boolean('pause_on_failure').notNull().default(false),
  pausedReason: text('paused_reason'),
  version: integer('version').notNull().default(1),
  // When a CLAIMED job's schedule was edited (migration 0007); written by lease/edit.ts, read by the settlement.
  rescheduledAt: tstz('rescheduled_at'),
  // Overlap and catch-up (migration 0008); run_through, decided_through and next_reason are the settlement's.
  overlapPolicy: overlapPolicy('overlap_policy').notNull().default('skip'),
  catchupWindowMs: bigint('catchup_window_ms', { mode: 'number' }),
  runThrough: tstz('run_through'),
  decidedThrough: tstz('decided_through'),
  nextReason: text('next_reason'),
  busySince: tstz('busy_since'),
  // Set while a backfill runs (migration 0009): where the regular schedule resumes.
  backfillResumeAt: tstz('backfill_resume_at'),
  // Pre-dispatch (migration 0015); written by lease/withdraw.ts and lease/release.ts, read by the claim.
  withdrawGeneration: bigint('withdraw_generation', { mode: 'number' }),
  withdrawRequestedAt: tstz('withdraw_requested_at'),
  heldUntil: tstz('held_until'),
  // The run of a CLAIMED job (migration 0017, docs/decisions/0027): its id, reserved by the claim, and its start.
  // Written by lease/claim.ts; read by the endings (which write its ended_runs row) and the runs view.
  runId: bigint('run_id', { mode: 'number' }),
  runStartedAt: tstz('run_started_at'),
  // A one-off job's successful run, kept on its COMPLETED row (migration 0018, docs/decisions/0033): its end and
  // its worker. Written by the simple completion (lease/settlement.ts); read by the runs view.
  runFinishedAt: tstz('run_finished_at'),
  runWorkerId: text('run_worker_id'),
});

/** The columns a run has, in the ended_runs table and in the runs view. */
const runFields = () => ({
  // No foreign key to jobs (migration 0003, docs/decisions/0008): the lease statements (src/lease/) insert runs only for jobs they hold locked.
  jobId: uuid('job_id').notNull(),
  attempt: integer('attempt').notNull(),
  leaseGeneration: bigint('lease_generation', { mode: 'number' }),
  scheduledFor: tstz('scheduled_for').notNull(),
  workerId: text('worker_id'),
  startedAt: tstz('started_at'),
  finishedAt: tstz('finished_at'), // NOT NULL in ended_runs (migration 0017); null in the runs view for a RUNNING run
  outcome: runOutcome('outcome').notNull(),
  error: text('error'),
  abortedBy: text('aborted_by'),
  reason: text('reason'),
});

/** Ended runs and SKIPPED occurrences, each written once (migration 0017, docs/decisions/0027). */
export const endedRuns = pgTable('ended_runs', {
  id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  ...runFields(),
});

/**
 * What readers see: ended_runs, each CLAIMED job's RUNNING run (migration 0017) and each COMPLETED one-off
 * job's SUCCEEDED run recorded on its row (migration 0018), the last two read from the job rows.
 */
export const runs = pgView('runs', {
  id: bigint('id', { mode: 'number' }).notNull(),
  ...runFields(),
}).existing();

export const tokenRole = pgEnum('kairos_token_role', ['reader', 'writer', 'admin', 'agent']);

export const tokens = pgTable('tokens', {
  id: uuid('id').primaryKey().defaultRandom(),
  namespace: text('namespace').notNull(),
  role: tokenRole('role').notNull(),
  name: text('name'),
  secretHash: text('secret_hash').notNull(),
  createdAt: tstz('created_at').notNull().defaultNow(),
  expiresAt: tstz('expires_at'),
  revokedAt: tstz('revoked_at'),
});

/** Payload schemas advertised by agents for SDK tasks (migration 0010, task-schemas.ts). */
export const taskSchemas = pgTable(
  'task_schemas',
  {
    namespace: text('namespace').notNull(),
    task: text('task').notNull(),
    schemaHash: text('schema_hash').notNull(),
    jsonSchema: jsonb('json_schema').notNull(),
    agentId: text('agent_id').notNull(),
    advertisedAt: tstz('advertised_at').notNull().defaultNow(),
  },
  (table) => [primaryKey({ columns: [table.namespace, table.task, table.schemaHash] })],
);

/** Every live coordinator and how many agent streams it serves (migration 0012, presence.ts; UNLOGGED). */
export const coordinatorPresence = pgTable('coordinator_presence', {
  coordinatorId: text('coordinator_id').primaryKey(),
  agents: integer('agents').notNull(),
  seenAt: tstz('seen_at').notNull().defaultNow(),
  freshUntil: tstz('fresh_until').notNull(),
});

/** Which agents are connected to which coordinator (migration 0011, presence.ts; UNLOGGED). */
export const agentPresence = pgTable(
  'agent_presence',
  {
    namespace: text('namespace').notNull(),
    agentId: text('agent_id').notNull(),
    coordinatorId: text('coordinator_id').notNull(),
    view: jsonb('view').notNull(),
    seenAt: tstz('seen_at').notNull().defaultNow(),
    freshUntil: tstz('fresh_until').notNull(),
  },
  (table) => [primaryKey({ columns: [table.namespace, table.agentId] })],
);

/** Webhooks (migration 0014, webhooks.ts; the queries are plain SQL). */
export const webhooks = pgTable('webhooks', {
  id: uuid('id').primaryKey(),
  namespace: text('namespace').notNull(),
  url: text('url').notNull(),
  secret: text('secret').notNull(),
  events: text('events').array().notNull(),
  jobId: uuid('job_id'),
  description: text('description'),
  createdAt: tstz('created_at').notNull().defaultNow(),
});

/** Webhook deliveries, the outbox the triggers of migration 0014 fill. */
export const webhookDeliveries = pgTable('webhook_deliveries', {
  id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
  webhookId: uuid('webhook_id').notNull(),
  namespace: text('namespace').notNull(),
  event: text('event').notNull(),
  jobId: uuid('job_id').notNull(),
  runId: bigint('run_id', { mode: 'number' }),
  body: jsonb('body').notNull(),
  state: text('state').notNull().default('pending'),
  attempts: integer('attempts').notNull().default(0),
  nextAttemptAt: tstz('next_attempt_at').notNull().defaultNow(),
  lockedUntil: tstz('locked_until'),
  lastStatus: integer('last_status'),
  lastError: text('last_error'),
  createdAt: tstz('created_at').notNull().defaultNow(),
  deliveredAt: tstz('delivered_at'),
});
