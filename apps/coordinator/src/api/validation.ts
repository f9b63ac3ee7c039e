/**
 * Validation of client requests, shared by REST and gRPC: both turn their
 * request into the same plain object and call `parseCreateJob`, so a request
 * is accepted or rejected the same way whichever transport carried it.
 * Failures name the field at fault; nothing is written before validation passes.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import {
  MAX_PREVIEW_COUNT,
  MISFIRE_POLICIES,
  OVERLAP_POLICIES,
  parseCron,
  parseMisfirePolicy,
  parseRunAt,
  ScheduleValidationError,
  validateTimezone,
  type CronSchedule,
  type MisfirePolicy,
  type OverlapPolicy,
} from '@kairos/schedule';
import { isJobId, JOB_STATES, MAX_CREATE_BATCH, type JobEdit, type JobRetry, type JobState } from '@kairos/store';
import { builtinPayloadProblem } from '@kairos/tasks';
import { findJsonProblem, MAX_PAYLOAD_DEPTH } from './json-safety';

/** A request field failed validation. */
export class ValidationError extends Error {
  override readonly name = 'ValidationError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

const PAYLOAD_BYTES = 64 * 1024;

/** Bounds, documented in docs/api.md. */
export const LIMITS = {
  payloadBytes: PAYLOAD_BYTES,
  /** The body of one request (other than a batch): generous for the envelope around a payload. */
  bodyBytes: PAYLOAD_BYTES * 2,
  nameChars: 200,
  taskChars: 100,
  idempotencyKeyChars: 200,
  maxAttempts: 100,
  timeoutSeconds: 7 * 24 * 3600,
  listPage: 1000,
  defaultListPage: 100,
  deliveriesPage: 200,
  defaultDeliveriesPage: 50,
  /** GET /jobs/{id}/runs answers a whole history of up to this many runs by default. */
  defaultRunsPage: 1000,
  previewCount: MAX_PREVIEW_COUNT,
  defaultPreviewCount: 10,
  retryIntervalMs: 7 * 24 * 3600 * 1000,
  retryMultiplier: 10,
  startJitterMs: 3600 * 1000,
  catchupWindowMs: 366 * 24 * 3600 * 1000,
  /** Jobs in one POST /jobs:batch or CreateJobs call (the store's MAX_CREATE_BATCH). */
  batchJobs: MAX_CREATE_BATCH,
  /** The body of one POST /jobs:batch: a batch of large payloads is split by its sender. */
  batchBodyBytes: 8 * 1024 * 1024,
} as const;

const retrySchema = z.strictObject(
  {
    initialIntervalMs: z
      .number({ error: 'retry.initialIntervalMs must be an integer' })
      .int('retry.initialIntervalMs must be an integer')
      .min(0, 'retry.initialIntervalMs must be at least 0')
      .max(LIMITS.retryIntervalMs, `retry.initialIntervalMs must be at most ${LIMITS.retryIntervalMs} (7 days)`)
      .nullish(),
    maxIntervalMs: z
      .number({ error: 'retry.maxIntervalMs must be an integer' })
      .int('retry.maxIntervalMs must be an integer')
      .min(0, 'retry.maxIntervalMs must be at least 0')
      .max(LIMITS.retryIntervalMs, `retry.maxIntervalMs must be at most ${LIMITS.retryIntervalMs} (7 days)`)
      .nullish(),
    multiplier: z
      .number({ error: 'retry.multiplier must be a number' })
      .min(1, 'retry.multiplier must be at least 1')
      .max(LIMITS.retryMultiplier, `retry.multiplier must be at most ${LIMITS.retryMultiplier}`)
      .nullish(),
    jitter: z
      .number({ error: 'retry.jitter must be a number' })
      .min(0, 'retry.jitter must be between 0 and 1')
      .max(1, 'retry.jitter must be between 0 and 1')
      .nullish(),
  },
  { error: 'retry must be an object {initialIntervalMs, maxIntervalMs, multiplier, jitter}' },
);

/** The job's retry policy as stored (null: the coordinator's default), from the request's `retry`. */
export function parseRetry(value: z.infer<typeof retrySchema> | null | undefined): JobRetry {
  const retry = {
    initialMs: value?.initialIntervalMs ?? null,
    maxMs: value?.maxIntervalMs ?? null,
    multiplier: value?.multiplier ?? null,
    jitter: value?.jitter ?? null,
  };
  if (retry.initialMs !== null && retry.maxMs !== null && retry.maxMs < retry.initialMs) {
    throw new ValidationError('retry.maxIntervalMs', 'retry.maxIntervalMs must be at least retry.initialIntervalMs');
  }
  return retry;
}

const startJitterField = z
  .number({ error: 'jitterMs must be an integer' })
  .int('jitterMs must be an integer')
  .min(0, 'jitterMs must be at least 0')
  .max(LIMITS.startJitterMs, `jitterMs must be at most ${LIMITS.startJitterMs} (1 hour)`);
const pauseOnFailureField = z.boolean({ error: 'pauseOnFailure must be true or false' });
const overlapPolicyField = z.enum(OVERLAP_POLICIES as [OverlapPolicy, ...OverlapPolicy[]], {
  error: `overlapPolicy must be one of ${OVERLAP_POLICIES.join(', ')}`,
});
const catchupWindowField = z
  .number({ error: 'catchupWindowMs must be an integer' })
  .int('catchupWindowMs must be an integer')
  .min(1000, 'catchupWindowMs must be at least 1000 (one second)')
  .max(LIMITS.catchupWindowMs, `catchupWindowMs must be at most ${LIMITS.catchupWindowMs} (one year)`);

const TASK_RE = /^[A-Za-z0-9][A-Za-z0-9_.:-]*$/;

// Fields checked by @kairos/schedule (its messages name them) are `unknown` to zod; their
// `meta` is what the OpenAPI document (openapi.ts) says about them.
// null is the same as leaving a field out.
const runAtField = z.unknown().meta({
  type: ['string', 'null'],
  format: 'date-time',
  description: 'One-off job: when it is due, RFC 3339 with an offset. Give runAt or schedule, not both.',
});
const scheduleFieldSchema = z.unknown().meta({
  type: ['string', 'null'],
  description: 'Recurring job: a cron expression (5 fields, or 6 with seconds first). Give runAt or schedule, not both.',
  examples: ['*/5 * * * *'],
});
const timezoneField = z.unknown().meta({ type: ['string', 'null'], description: 'IANA zone the schedule is read in; default UTC', examples: ['Europe/Berlin'] });
const misfirePolicyField = z.unknown().meta({
  type: ['string', 'null'],
  enum: [...MISFIRE_POLICIES, null],
  description: 'What happens to occurrences missed while nothing could run them; default fire-once',
});

export const createJobSchema = z.strictObject({
  runAt: runAtField.optional(),
  schedule: scheduleFieldSchema.optional(),
  timezone: timezoneField.optional(),
  task: z
    .string({ error: 'task must be a string' })
    .min(1, 'task must not be empty')
    .max(LIMITS.taskChars, `task must be at most ${LIMITS.taskChars} characters`)
    .regex(TASK_RE, 'task may contain letters, digits, and _ . : - (starting with a letter or digit)'),
  payload: z
    .record(z.string(), z.unknown(), { error: 'payload must be a JSON object' })
    .optional(),
  name: z
    .string({ error: 'name must be a string' })
    .max(LIMITS.nameChars, `name must be at most ${LIMITS.nameChars} characters`)
    .nullish(),
  maxAttempts: z
    .number({ error: 'maxAttempts must be an integer' })
    .int('maxAttempts must be an integer')
    .min(1, 'maxAttempts must be at least 1')
    .max(LIMITS.maxAttempts, `maxAttempts must be at most ${LIMITS.maxAttempts}`)
    .optional(),
  timeoutSeconds: z
    .number({ error: 'timeoutSeconds must be a whole number of seconds' })
    .int('timeoutSeconds must be a whole number of seconds')
    .positive('timeoutSeconds must be positive')
    .max(LIMITS.timeoutSeconds, `timeoutSeconds must be at most ${LIMITS.timeoutSeconds}`)
    .nullish(),
  misfirePolicy: misfirePolicyField.optional(),
  idempotencyKey: z
    .string({ error: 'idempotencyKey must be a string' })
    .min(1, 'idempotencyKey must not be empty')
    .max(LIMITS.idempotencyKeyChars, `idempotencyKey must be at most ${LIMITS.idempotencyKeyChars} characters`)
    .nullish(),
  retry: retrySchema.nullish(),
  jitterMs: startJitterField.nullish(),
  pauseOnFailure: pauseOnFailureField.nullish(),
  overlapPolicy: overlapPolicyField.nullish(),
  catchupWindowMs: catchupWindowField.nullish(),
});

export interface CreateJobInput {
  name: string | null;
  task: string;
  cron: CronSchedule | null;
  runAt: Date | null;
  payload: Record<string, unknown>;
  maxAttempts: number;
  timeoutMs: number | null;
  misfirePolicy: MisfirePolicy;
  idempotencyKey: string | null;
  retry: JobRetry;
  startJitterMs: number;
  pauseOnFailure: boolean;
  overlapPolicy: OverlapPolicy;
  catchupWindowMs: number | null;
  /** sha256 of the normalised request: same key + same digest = the same request. */
  requestDigest: string;
}

/**
 * A request body that must be a JSON object matching `schema`: an object, then
 * (before any recursive code sees it) no nesting deeper than `maxDepth`, NUL or
 * lone surrogate, then the schema; each refusal names its field.
 */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown, maxDepth: number): z.infer<S> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationError('body', 'request body must be a JSON object');
  }
  const unsafe = findJsonProblem(body as Record<string, unknown>, maxDepth);
  if (unsafe) throw new ValidationError(unsafe.field, unsafe.message);
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw fromZod(parsed.error, body);
  return parsed.data;
}

export function parseCreateJob(body: unknown): CreateJobInput {
  const req = parseBody(createJobSchema, body, MAX_PAYLOAD_DEPTH);
  const hasRunAt = req.runAt !== undefined && req.runAt !== null;
  const hasSchedule = req.schedule !== undefined && req.schedule !== null;
  if (hasRunAt === hasSchedule) {
    throw new ValidationError(hasRunAt ? 'schedule' : 'runAt', 'give exactly one of runAt (one-off) and schedule (cron)');
  }
  let cron: CronSchedule | null = null;
  let runAt: Date | null = null;
  if (hasSchedule) {
    cron = scheduleField(() => parseCron(req.schedule, req.timezone ?? undefined));
    if (req.timezone !== undefined && req.timezone !== null) scheduleField(() => validateTimezone(req.timezone));
  } else {
    if (req.timezone !== undefined && req.timezone !== null) {
      throw new ValidationError('timezone', 'timezone applies to schedule only; runAt carries its own offset');
    }
    runAt = scheduleField(() => parseRunAt(req.runAt));
  }
  const payload = req.payload ?? {};
  checkPayloadSize(payload);
  const misfirePolicy = scheduleField(() => parseMisfirePolicy(req.misfirePolicy ?? undefined));
  if (!hasSchedule && (req.jitterMs ?? 0) > 0) throw new ValidationError('jitterMs', 'jitterMs applies to recurring jobs (schedule) only');
  if (!hasSchedule && req.pauseOnFailure === true) {
    throw new ValidationError('pauseOnFailure', 'pauseOnFailure applies to recurring jobs (schedule) only; a one-off job that fails goes DEAD');
  }
  if (!hasSchedule && req.overlapPolicy !== undefined && req.overlapPolicy !== null && req.overlapPolicy !== 'skip') {
    throw new ValidationError('overlapPolicy', 'overlapPolicy applies to recurring jobs (schedule) only');
  }
  if (req.catchupWindowMs !== undefined && req.catchupWindowMs !== null && misfirePolicy !== 'catch-up') {
    throw new ValidationError('catchupWindowMs', 'catchupWindowMs applies to misfirePolicy "catch-up" only');
  }
  const input: Omit<CreateJobInput, 'requestDigest'> = {
    overlapPolicy: req.overlapPolicy ?? 'skip',
    catchupWindowMs: req.catchupWindowMs ?? null,
    retry: parseRetry(req.retry),
    startJitterMs: req.jitterMs ?? 0,
    pauseOnFailure: req.pauseOnFailure ?? false,
    name: req.name ?? null,
    task: req.task,
    cron,
    runAt,
    payload,
    maxAttempts: req.maxAttempts ?? 3,
    timeoutMs: req.timeoutSeconds ? Math.ceil(req.timeoutSeconds * 1000) : null,
    misfirePolicy,
    idempotencyKey: req.idempotencyKey ?? null,
  };
  // Last: every field of the request itself is valid; now the task's own contract.
  checkBuiltinPayload(req.task, payload);
  return { ...input, requestDigest: digest(input) };
}

/**
 * A built-in task's payload must be one the task accepts (@kairos/tasks): a
 * `sleep` job without `seconds` is refused here, naming `payload.seconds`,
 * not run to fail three times. Other tasks' payloads are their handlers' to judge.
 */
function checkBuiltinPayload(task: string, payload: unknown): void {
  const problem = builtinPayloadProblem(task, payload);
  if (problem !== null) throw new ValidationError(problem.field, `invalid payload for task "${task}": ${problem.field}: ${problem.message}`);
}

/** A payload larger than LIMITS.payloadBytes as JSON is refused, naming `payload`. */
function checkPayloadSize(payload: unknown): void {
  const payloadBytes = Buffer.byteLength(JSON.stringify(payload));
  if (payloadBytes > LIMITS.payloadBytes) throw new ValidationError('payload', `payload is ${payloadBytes} bytes; the limit is ${LIMITS.payloadBytes}`);
}

/** Schedule errors from @kairos/schedule as the API's ValidationError (same field, same message). */
function scheduleField<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error: unknown) {
    if (error instanceof ScheduleValidationError) throw new ValidationError(error.field, error.message);
    throw error;
  }
}

/**
 * POST /jobs:batch as documented: each item is a POST /jobs body. The parser
 * below checks only the envelope; items are judged one by one (parseCreateJob),
 * so one bad item does not sink the others.
 */
export const createJobsSchema = z.strictObject({
  jobs: z
    .array(
      // Documented as a CreateJobRequest, but an item that is not one is answered in `results` (400), not refused with the call.
      z.union([createJobSchema, z.unknown()]).meta({ description: 'A POST /jobs body (CreateJobRequest), judged on its own' }),
    )
    .min(1)
    .max(LIMITS.batchJobs)
    .meta({ description: `1 to ${LIMITS.batchJobs} jobs, each a POST /jobs body` }),
});

/** The items of a batch create, unjudged; refuses a body that is not `{jobs: [1..1000 items]}`. */
export function parseCreateJobs(body: unknown): unknown[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationError('body', 'request body must be a JSON object {"jobs": [...]}');
  }
  const unknownKey = Object.keys(body).find((key) => key !== 'jobs');
  if (unknownKey !== undefined) throw new ValidationError(unknownKey, `unknown field ${JSON.stringify(unknownKey)}; a batch is {"jobs": [...]}`);
  return checkBatchSize((body as { jobs?: unknown }).jobs);
}

/** A batch's items: an array of 1 to LIMITS.batchJobs, or a ValidationError naming `jobs`. */
export function checkBatchSize<T>(jobs: T[] | unknown): T[] {
  if (!Array.isArray(jobs)) throw new ValidationError('jobs', 'jobs must be an array of jobs to create');
  if (jobs.length === 0 || jobs.length > LIMITS.batchJobs) {
    throw new ValidationError('jobs', `jobs must hold 1 to ${LIMITS.batchJobs} jobs, not ${jobs.length}; split larger loads into several calls`);
  }
  return jobs as T[];
}

export const previewSchema = z.strictObject({
  schedule: z.unknown().meta({ type: 'string', description: 'A cron expression (5 fields, or 6 with seconds first)', examples: ['0 9 * * 1-5'] }),
  timezone: timezoneField.optional(),
  count: z.unknown().optional().meta({ type: ['integer', 'null'], minimum: 1, maximum: LIMITS.previewCount, description: 'How many occurrences; default 10' }),
  from: z.unknown().optional().meta({ type: ['string', 'null'], format: 'date-time', description: 'List occurrences after this instant; default now' }),
});

export interface PreviewInput {
  cron: CronSchedule;
  count: number;
  /** Unset: from now. */
  from: Date | null;
}

/** POST /schedules/preview: {schedule, timezone?, count?, from?}. */
export function parsePreview(body: unknown): PreviewInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationError('body', 'request body must be a JSON object');
  }
  const parsed = previewSchema.safeParse(body);
  if (!parsed.success) throw fromZod(parsed.error, body);
  const req = parsed.data;
  if (req.schedule === undefined || req.schedule === null) throw new ValidationError('schedule', 'schedule is required');
  return {
    cron: scheduleField(() => parseCron(req.schedule, req.timezone ?? undefined)),
    count: parseCount(req.count, 'body'),
    from: req.from === undefined || req.from === null ? null : scheduleField(() => parseRunAt(req.from, 'from')),
  };
}

/** How many occurrences to list: an integer from 1 to LIMITS.previewCount (in a query string: its digits). */
export function parseCount(value: unknown, from: 'query' | 'body' = 'query'): number {
  if (value === undefined || value === null) return LIMITS.defaultPreviewCount;
  const n = from === 'query' && typeof value === 'string' && /^\d{1,7}$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > LIMITS.previewCount) {
    throw new ValidationError('count', `count must be an integer from 1 to ${LIMITS.previewCount}`);
  }
  return n;
}

export const editJobSchema = createJobSchema.omit({ task: true, idempotencyKey: true });

/** A validated edit: the fields to change (absent: unchanged). */
export type EditJobInput = JobEdit;

/**
 * PATCH /jobs/{id}: the fields to change. `current` is the job as it is (its
 * schedule and zone), so a new timezone alone re-reads the current schedule.
 * `null` resets a field to its default (name, timeoutSeconds, retry, jitterMs).
 */
export function parseEditJob(body: unknown, current: { schedule: string | null; timezone: string; task: string }): EditJobInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationError('body', 'request body must be a JSON object');
  }
  const unsafe = findJsonProblem(body as Record<string, unknown>, MAX_PAYLOAD_DEPTH);
  if (unsafe) throw new ValidationError(unsafe.field, unsafe.message);
  for (const fixed of ['task', 'idempotencyKey'] as const) {
    if (fixed in body) throw new ValidationError(fixed, `${fixed} cannot be changed; create a new job instead`);
  }
  const parsed = editJobSchema.safeParse(body);
  if (!parsed.success) throw fromZod(parsed.error, body);
  const req = parsed.data;
  if (Object.values(req).every((value) => value === undefined)) {
    throw new ValidationError('body', 'nothing to change: give at least one field');
  }
  const has = (value: unknown) => value !== undefined && value !== null;
  if (has(req.runAt) && has(req.schedule)) throw new ValidationError('schedule', 'give runAt (one-off) or schedule (recurring), not both');
  const edit: JobEdit = {};
  if (has(req.runAt)) {
    if (has(req.timezone)) throw new ValidationError('timezone', 'timezone applies to schedule only; runAt carries its own offset');
    edit.runAt = scheduleField(() => parseRunAt(req.runAt));
  } else if (has(req.schedule) || has(req.timezone)) {
    if (!has(req.schedule) && current.schedule === null) {
      throw new ValidationError('timezone', 'timezone applies to recurring jobs; this job is one-off (give a schedule to make it recurring)');
    }
    edit.schedule = scheduleField(() => parseCron(req.schedule ?? current.schedule, req.timezone ?? current.timezone));
  }
  if (req.payload !== undefined) {
    checkPayloadSize(req.payload);
    checkBuiltinPayload(current.task, req.payload);
    edit.payload = req.payload;
  }
  if (req.name !== undefined) edit.name = req.name;
  if (req.maxAttempts !== undefined) edit.maxAttempts = req.maxAttempts;
  if (req.timeoutSeconds !== undefined) edit.timeoutMs = req.timeoutSeconds ? Math.ceil(req.timeoutSeconds * 1000) : null;
  if (has(req.misfirePolicy)) edit.misfirePolicy = scheduleField(() => parseMisfirePolicy(req.misfirePolicy));
  if (req.retry !== undefined) edit.retry = parseRetry(req.retry);
  if (req.jitterMs !== undefined) edit.startJitterMs = req.jitterMs ?? 0;
  if (req.pauseOnFailure !== undefined) edit.pauseOnFailure = req.pauseOnFailure ?? false;
  if (req.overlapPolicy !== undefined) edit.overlapPolicy = req.overlapPolicy ?? 'skip';
  if (req.catchupWindowMs !== undefined) {
    if (req.catchupWindowMs !== null && edit.misfirePolicy !== undefined && edit.misfirePolicy !== 'catch-up') {
      throw new ValidationError('catchupWindowMs', 'catchupWindowMs applies to misfirePolicy "catch-up" only');
    }
    edit.catchupWindowMs = req.catchupWindowMs;
  }
  return edit;
}

/** The version an edit expects: an If-Match value (`"3"`, `3`, `W/"3"`) or a gRPC expected_version (0: any). */
export function parseExpectedVersion(value: unknown): number | undefined {
  if (value === undefined || value === null || value === '' || value === 0) return undefined;
  const text = typeof value === 'number' ? String(value) : String(value).trim();
  const match = /^(?:W\/)?"?(\d{1,9})"?$/.exec(text);
  if (match === null || Number(match[1]) < 1) {
    throw new ValidationError('If-Match', 'If-Match must be the job\'s version as its ETag gives it, e.g. "3"');
  }
  return Number(match[1]);
}

export const backfillSchema = z.strictObject({
  from: z.unknown().meta({ type: 'string', format: 'date-time', description: 'First instant of the range (included)' }),
  to: z.unknown().meta({ type: 'string', format: 'date-time', description: 'End of the range (excluded)' }),
});

/** POST /jobs/{id}/backfill: {from, to}, RFC 3339, from before to. */
export function parseBackfill(body: unknown): { from: Date; to: Date } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ValidationError('body', 'request body must be a JSON object {from, to}');
  }
  const parsed = backfillSchema.safeParse(body);
  if (!parsed.success) throw fromZod(parsed.error, body);
  if (parsed.data.from === undefined || parsed.data.from === null) throw new ValidationError('from', 'from is required');
  if (parsed.data.to === undefined || parsed.data.to === null) throw new ValidationError('to', 'to is required');
  const from = scheduleField(() => parseRunAt(parsed.data.from, 'from'));
  const to = scheduleField(() => parseRunAt(parsed.data.to, 'to'));
  if (to.getTime() <= from.getTime()) throw new ValidationError('to', 'to must be after from (the range is [from, to))');
  return { from, to };
}

/** A query parameter: one value, not empty (leave it out for its default); anything else is refused, naming it. */
export function queryValue(query: Record<string, unknown>, field: string): unknown {
  const value = query[field];
  if (Array.isArray(value)) throw new ValidationError(field, `${field} must be given once`);
  if (value === '') throw new ValidationError(field, `${field} must not be empty; leave it out for the default`);
  return value;
}

const limitParam = (fallback: number, max: number = LIMITS.listPage) =>
  z.unknown().meta({ type: 'integer', minimum: 1, maximum: max, default: fallback, description: 'Page size' });
const cursorParam = (shape: Record<string, unknown>) =>
  z.unknown().meta({ type: 'string', ...shape, description: 'The nextCursor of the previous page, as given; a cursor not from this listing is a 400' });

/** GET /jobs query parameters (the OpenAPI document's, openapi.ts). */
export const listJobsQuerySchema = z.object({
  state: z.unknown().meta({ type: 'string', enum: [...JOB_STATES], description: 'Only jobs in this state (any case)' }),
  task: z.unknown().meta({ type: 'string', maxLength: 200, description: 'Only jobs of this task' }),
  name: z.unknown().meta({ type: 'string', maxLength: 200, description: 'Only jobs whose name starts with this (case-sensitive)' }),
  limit: limitParam(LIMITS.defaultListPage),
  cursor: cursorParam({ format: 'uuid' }),
});

/** GET /jobs/{id}/runs query parameters. */
export const listRunsQuerySchema = z.object({ limit: limitParam(LIMITS.defaultRunsPage), cursor: cursorParam({ pattern: '^[0-9]{1,15}$' }) });

/** GET /webhooks/{id}/deliveries query parameters (newest first: the cursor is the last delivery id seen). */
export const listDeliveriesQuerySchema = z.object({
  limit: limitParam(LIMITS.defaultDeliveriesPage, LIMITS.deliveriesPage),
  cursor: cursorParam({ pattern: '^[0-9]{1,18}$' }),
});

export interface ListJobsInput {
  state?: JobState;
  task?: string;
  name?: string;
  limit: number;
  cursor?: string;
}

export function parseListJobs(query: Record<string, unknown>): ListJobsInput {
  const out: ListJobsInput = { limit: LIMITS.defaultListPage };
  const state = emptyToUndefined(queryValue(query, 'state'));
  if (state !== undefined) {
    const upper = String(state).toUpperCase();
    if (!JOB_STATES.includes(upper as JobState)) {
      throw new ValidationError('state', `state must be one of ${JOB_STATES.join(', ')}`);
    }
    out.state = upper as JobState;
  }
  const task = emptyToUndefined(queryValue(query, 'task'));
  if (task !== undefined) out.task = textFilter(task, 'task');
  const name = emptyToUndefined(queryValue(query, 'name'));
  if (name !== undefined) out.name = textFilter(name, 'name');
  out.limit = parseLimit(queryValue(query, 'limit'), LIMITS.defaultListPage);
  const cursor = emptyToUndefined(queryValue(query, 'cursor'));
  if (cursor !== undefined) {
    // Today's cursors are job ids; a cursor that is not one was never handed out.
    if (!isJobId(String(cursor))) throw new ValidationError('cursor', 'cursor is not valid: pass back a nextCursor');
    out.cursor = String(cursor).toLowerCase();
  }
  return out;
}

/** A text filter of a listing: at most 200 characters, and none PostgreSQL text cannot hold (NUL). */
function textFilter(value: unknown, field: 'task' | 'name'): string {
  const text = String(value);
  if (text.length > 200) throw new ValidationError(field, `${field} must be at most 200 characters`);
  if (text.includes('\u0000')) throw new ValidationError(field, `${field} must not contain NUL characters`);
  return text;
}

/** The page size of a listing: an integer from 1 to `max` (in a query string, its digits). */
function parseLimit(value: unknown, fallback: number, max: number = LIMITS.listPage): number {
  const limit = emptyToUndefined(value);
  if (limit === undefined) return fallback;
  const n = Number(limit);
  if (!Number.isInteger(n) || n < 1 || n > max) {
    throw new ValidationError('limit', `limit must be an integer from 1 to ${max}`);
  }
  return n;
}

/** GET /webhooks/{id}/deliveries and ListWebhookDeliveries: `limit` (1 to 200, default 50) and `cursor`. */
export function parseListDeliveries(query: Record<string, unknown>): { limit: number; before: number | null } {
  const cursor = emptyToUndefined(queryValue(query, 'cursor'));
  if (cursor !== undefined && !/^\d{1,18}$/.test(String(cursor))) throw new ValidationError('cursor', 'cursor is not valid: pass back a nextCursor');
  return {
    limit: parseLimit(queryValue(query, 'limit'), LIMITS.defaultDeliveriesPage, LIMITS.deliveriesPage),
    before: cursor === undefined ? null : Number(cursor),
  };
}

/** GET /jobs/{id}/runs and ListRuns: `limit` (1 to 1000, default 1000) and `cursor` (from a previous page). */
export function parseListRuns(query: Record<string, unknown>): { limit: number; afterRunId: number } {
  const cursor = emptyToUndefined(queryValue(query, 'cursor'));
  const afterRunId = cursor === undefined ? 0 : Number(cursor);
  if (!Number.isSafeInteger(afterRunId) || afterRunId < 0) throw new ValidationError('cursor', 'cursor is not valid: pass back a nextCursor');
  return { limit: parseLimit(queryValue(query, 'limit'), LIMITS.defaultRunsPage), afterRunId };
}

function emptyToUndefined(value: unknown): unknown {
  return value === undefined || value === null || value === '' ? undefined : value;
}

/** The first issue as a ValidationError naming its field; `input` (what was parsed) tells missing from mistyped. */
export function fromZod(error: z.ZodError, input: unknown): ValidationError {
  const issue = error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    // An empty key is named `""`: a refusal always names a field.
    const unknown = issue.keys[0] === '' ? '""' : (issue.keys[0] ?? 'body');
    const key = [...issue.path.map(String), unknown].join('.');
    return new ValidationError(key, `unknown field ${key}`);
  }
  const field = issue.path.length > 0 ? issue.path.map(String).join('.') : 'body';
  // Missing is "required"; present with the wrong type keeps the schema's "must be a …".
  const message = issue.code === 'invalid_type' && valueAt(input, issue.path) === undefined ? `${field} is required` : issue.message;
  return new ValidationError(field, message);
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let current = input;
  for (const key of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[key];
  }
  return current;
}

/**
 * A job or token id (a UUID) from a path or request field: empty or not a UUID is a bad
 * request naming `field`; a well-formed id that does not exist (or is in
 * another namespace) is the caller's 404.
 */
export function parseId(value: string, field: 'jobId' | 'tokenId' | 'webhookId' = 'jobId'): string {
  if (value === '') throw new ValidationError(field, `${field} is required`);
  if (!isJobId(value)) throw new ValidationError(field, `${field} must be a UUID such as 0190a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d`);
  return value.toLowerCase();
}

function digest(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex');
}

/** JSON with object keys sorted, so equal requests hash equally whatever their key order. */
function canonicalJson(value: unknown): string {
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
