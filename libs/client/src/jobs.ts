/**
 * Jobs as this client's callers see them, and their conversion to and from the
 * kairos.v1 messages.
 *
 * Inputs are checked here before anything is sent, so that an obviously bad
 * request (two schedules, an unparseable runAt, a payload that is not a JSON
 * object, a negative count) fails with `invalid-argument` naming the field,
 * exactly as the coordinator would answer it. Everything else — cron syntax,
 * time zones, size limits — is the coordinator's to judge.
 */
import { create, type JsonObject, type MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  CreateJobRequestSchema,
  type RetryPolicySchema,
  JobState as WireJobState,
  MisfirePolicy as WireMisfirePolicy,
  OverlapPolicy as WireOverlapPolicy,
  type CreateJobRequest,
  type Job as WireJob,
} from '@kairos/proto';
import { KairosError, KairosErrorCode } from './error';
import { counter, dateOrNull, textOrNull } from './wire-values';

type RetryPolicyInit = Omit<MessageInitShape<typeof RetryPolicySchema>, '$typeName'>;

/**
 * Lifecycle state of a job (see jobs.proto for the state diagram).
 * `UNSPECIFIED` is never sent by a coordinator of this version; it stands for
 * a value this client does not know (a newer server).
 */
export type JobState = 'DUE' | 'CLAIMED' | 'COMPLETED' | 'DEAD' | 'PAUSED' | 'CANCELLED' | 'UNSPECIFIED';

/** The states a listing can be filtered by. */
export const JOB_STATES = ['DUE', 'CLAIMED', 'COMPLETED', 'DEAD', 'PAUSED', 'CANCELLED'] as const satisfies readonly JobState[];

/** What happens to missed occurrences of a recurring job: run once late, skip (recorded), or run every one in order. */
export type MisfirePolicy = 'fire-once' | 'skip' | 'catch-up';

export const MISFIRE_POLICIES = ['fire-once', 'skip', 'catch-up'] as const satisfies readonly MisfirePolicy[];

/** What happens to occurrences that come due while the job's previous run still runs. */
export type OverlapPolicy = 'skip' | 'buffer-one' | 'buffer-all' | 'cancel-other';

export const OVERLAP_POLICIES = ['skip', 'buffer-one', 'buffer-all', 'cancel-other'] as const satisfies readonly OverlapPolicy[];

/** Fields of a new job that do not depend on when it runs. */
interface CreateJobCommon {
  /** Task that runs the job, e.g. `http`, `sleep`, or a custom SDK task. Required. */
  task: string;
  /** Handler input, a JSON object; default `{}`. Sent as JSON (Dates become strings). */
  payload?: JsonObject;
  /** Human-readable label, not unique. */
  name?: string;
  /** Attempts per occurrence, expired leases included; server default 3. */
  maxAttempts?: number;
  /** Maximum run time of one attempt in seconds; 0 or unset: no timeout. */
  timeoutSeconds?: number;
  /** Missed occurrences of a recurring job; server default `fire-once`. */
  misfirePolicy?: MisfirePolicy;
  /** Makes the call safe to retry: the same key and request return the first job. */
  idempotencyKey?: string;
  /** Retry policy for failed attempts; unset fields take the coordinator's defaults. */
  retry?: RetryPolicyInput;
}

/** How failed attempts are retried; every field optional (the coordinator's default). */
export interface RetryPolicyInput {
  /** Delay after the first failed attempt, ms. */
  initialIntervalMs?: number;
  /** Longest delay, ms. */
  maxIntervalMs?: number;
  /** Growth per attempt, 1 to 10. */
  multiplier?: number;
  /** Fraction of each delay taken off at random, 0 to 1. */
  jitter?: number;
}

/** The retry policy in force on a job. */
export interface RetryPolicy {
  initialIntervalMs: number;
  maxIntervalMs: number;
  multiplier: number;
  jitter: number;
}

/**
 * A new job: either one-off (`runAt`, a Date or an RFC 3339 string; a past time
 * means "as soon as possible") or recurring (`schedule`, cron with 5 or 6
 * fields, evaluated in `timezone`, default UTC).
 *
 * Execution is at-least-once: the handler must be idempotent.
 */
export type CreateJobInput = CreateJobCommon &
  (
    | {
        runAt: Date | string;
        schedule?: undefined;
        timezone?: undefined;
        jitterMs?: undefined;
        pauseOnFailure?: undefined;
        overlapPolicy?: undefined;
        catchupWindowMs?: undefined;
      }
    | {
        schedule: string;
        timezone?: string;
        runAt?: undefined;
        /** Each occurrence starts up to this many ms late, fixed per occurrence (at most 1 h). */
        jitterMs?: number;
        /** An occurrence that exhausts its attempts pauses the job instead of moving on. */
        pauseOnFailure?: boolean;
        /** Occurrences that come due while the previous run still runs; server default `skip`. */
        overlapPolicy?: OverlapPolicy;
        /** misfirePolicy `catch-up`: skip missed occurrences older than this (ms). */
        catchupWindowMs?: number;
      }
  );

export interface CreateJobResult {
  jobId: string;
  /** false when an earlier request with the same idempotency key already created it. */
  created: boolean;
  /** The job as the call left it (the existing one when `created` is false). */
  job: Job;
}

/** The most jobs one createJobs call takes (the coordinator's limit). */
export const MAX_BATCH_JOBS = 1000;

/**
 * One item's answer from createJobs: the job made or found by its idempotency
 * key, or the error createJob would have thrown for this item alone.
 */
export type CreateJobsItem = { jobId: string; created: boolean; error: null } | { jobId: null; created: false; error: KairosError };

/** A job as stored by the coordinator. Times are database-clock instants. */
export interface Job {
  id: string;
  namespace: string;
  name: string | null;
  task: string;
  /** Set for one-off jobs. */
  runAt: Date | null;
  /** Cron expression; set for recurring jobs. */
  schedule: string | null;
  /** IANA zone the schedule is evaluated in. */
  timezone: string;
  payload: JsonObject;
  state: JobState;
  /** When the job is next eligible to run; null when it will not run again. */
  nextRunAt: Date | null;
  /** Attempts spent on the current occurrence. */
  attempt: number;
  maxAttempts: number;
  /** 0 means no timeout. */
  timeoutSeconds: number;
  misfirePolicy: MisfirePolicy;
  idempotencyKey: string | null;
  /** Fencing token of the most recent lease; 0 if never claimed. */
  leaseGeneration: number;
  /** The agent holding the lease (CLAIMED); null otherwise. */
  leaseOwner: string | null;
  /** The schedule occurrence the pending or running attempt serves; null when the job will not run again. */
  occurrenceAt: Date | null;
  /** An abort of the running run in progress (abortRun), until the run has ended; null otherwise. */
  abort: { requestedAt: Date | null; requestedBy: string | null; stopSchedule: boolean } | null;
  /** The retry policy in force. */
  retry: RetryPolicy;
  /** Start jitter of a recurring job's occurrences, ms; 0: on time. */
  jitterMs: number;
  pauseOnFailure: boolean;
  /** Why the job was paused automatically; null otherwise. */
  pausedReason: string | null;
  /** Grows by one on every edit. */
  version: number;
  overlapPolicy: OverlapPolicy;
  /** misfirePolicy `catch-up`: missed occurrences older than this (ms) are skipped; null: no bound. */
  catchupWindowMs: number | null;
  /** A backfill in progress (`through`: its last occurrence, null when the current one is the last); null otherwise. */
  backfill: { through: Date | null; resumeAt: Date | null } | null;
  createdAt: Date | null;
  updatedAt: Date | null;
}

/** Changes for updateJob; absent fields stay as they are. */
export interface UpdateJobInput {
  /** Make (or keep) the job recurring on this schedule. */
  schedule?: string;
  /** The schedule's zone; alone, the current schedule is re-read in it. */
  timezone?: string;
  /** Make (or keep) the job one-off at this instant. */
  runAt?: Date | string;
  payload?: JsonObject;
  /** null clears it. */
  name?: string | null;
  maxAttempts?: number;
  /** null (or 0) removes the timeout. */
  timeoutSeconds?: number | null;
  misfirePolicy?: MisfirePolicy;
  /** Replaces the retry policy; unset fields take the coordinator's defaults. */
  retry?: RetryPolicyInput;
  jitterMs?: number;
  pauseOnFailure?: boolean;
  overlapPolicy?: OverlapPolicy;
  /** null removes the catch-up window. */
  catchupWindowMs?: number | null;
}

export interface UpdateJobResult {
  job: Job;
  /** `now`, or `next-claim` when the job was running: the change applies from its next claim. */
  appliesFrom: 'now' | 'next-claim';
}

/** The UpdateJob request for an input; throws `invalid-argument` naming a bad field. */
export function updateJobRequest(jobId: string, input: UpdateJobInput, expectedVersion: number | undefined) {
  if (typeof input !== 'object' || input === null) throw invalid('changes', 'changes must be an object');
  const misfirePolicy = misfireToWire(input.misfirePolicy);
  return {
    jobId,
    expectedVersion: uint32(expectedVersion, 'expectedVersion'),
    ...(input.schedule === undefined ? {} : { schedule: input.schedule }),
    ...(input.timezone === undefined ? {} : { timezone: input.timezone }),
    ...(input.runAt === undefined ? {} : { runAt: timestampFromDate(instant(input.runAt)) }),
    ...(input.payload === undefined ? {} : { payload: jsonObject(input.payload) }),
    ...(input.name === undefined ? {} : { name: input.name ?? '' }),
    ...(input.maxAttempts === undefined ? {} : { maxAttempts: uint32(input.maxAttempts, 'maxAttempts') }),
    ...(input.timeoutSeconds === undefined ? {} : { timeoutSeconds: uint32(input.timeoutSeconds ?? 0, 'timeoutSeconds') }),
    misfirePolicy,
    ...(input.retry === undefined ? {} : { retry: retryRequest(input.retry) }),
    ...(input.jitterMs === undefined ? {} : { jitterMs: uint32(input.jitterMs, 'jitterMs') }),
    ...(input.pauseOnFailure === undefined ? {} : { pauseOnFailure: input.pauseOnFailure === true }),
    overlapPolicy: overlapToWire(input.overlapPolicy),
    ...(input.catchupWindowMs === undefined ? {} : { catchupWindowMs: windowToWire(input.catchupWindowMs ?? 0) }),
  };
}

const OVERLAP_TO_WIRE: Record<OverlapPolicy, WireOverlapPolicy> = {
  skip: WireOverlapPolicy.SKIP,
  'buffer-one': WireOverlapPolicy.BUFFER_ONE,
  'buffer-all': WireOverlapPolicy.BUFFER_ALL,
  'cancel-other': WireOverlapPolicy.CANCEL_OTHER,
};

const OVERLAP_FROM_WIRE: Record<number, OverlapPolicy | undefined> = Object.fromEntries(
  Object.entries(OVERLAP_TO_WIRE).map(([name, wire]) => [wire, name as OverlapPolicy]),
);

function overlapToWire(policy: OverlapPolicy | undefined): WireOverlapPolicy {
  if (policy === undefined) return WireOverlapPolicy.UNSPECIFIED;
  if (!Object.hasOwn(OVERLAP_TO_WIRE, policy)) throw invalid('overlapPolicy', `overlapPolicy must be one of ${OVERLAP_POLICIES.join(', ')}`);
  return OVERLAP_TO_WIRE[policy];
}

function windowToWire(ms: number): bigint {
  if (!Number.isSafeInteger(ms) || ms < 0) throw invalid('catchupWindowMs', `catchupWindowMs must be a whole number of milliseconds, got ${ms}`);
  return BigInt(ms);
}

/** What startBackfill answers: the occurrences the backfill runs. */
export interface StartedBackfill {
  first: Date | null;
  last: Date | null;
  count: number;
  /** The regular occurrence the schedule resumes from afterwards. */
  resumeAt: Date | null;
}

/** What abortRun answers: the run being stopped (it ends CANCELLED once the agent confirms; follow it in listRuns). */
export interface AbortedRun {
  runId: string;
  /** The fencing token of that run. */
  leaseGeneration: number;
  /** The agent asked to stop it. */
  agentId: string | null;
  /** Who asked first (an abort asked twice keeps the first caller). */
  requestedBy: string | null;
  /** Whether a recurring job ends with the run instead of going on to its next occurrence. */
  stopSchedule: boolean;
}

export interface AbortRunOptions {
  /** Recurring jobs: end the schedule too (the job becomes CANCELLED). Default false. */
  stopSchedule?: boolean;
}

export interface ListJobsOptions {
  state?: Exclude<JobState, 'UNSPECIFIED'>;
  task?: string;
  /** Only jobs whose name starts with this (case-sensitive). */
  name?: string;
  /** Page size; server default 100, capped at 1000. */
  limit?: number;
  /** `nextCursor` of the previous page. */
  cursor?: string;
}

export interface JobPage {
  jobs: Job[];
  /** Cursor for the next page; null on the last page. */
  nextCursor: string | null;
}

const STATE_TO_WIRE: Record<Exclude<JobState, 'UNSPECIFIED'>, WireJobState> = {
  DUE: WireJobState.DUE,
  CLAIMED: WireJobState.CLAIMED,
  COMPLETED: WireJobState.COMPLETED,
  DEAD: WireJobState.DEAD,
  PAUSED: WireJobState.PAUSED,
  CANCELLED: WireJobState.CANCELLED,
};

const STATE_FROM_WIRE: Record<number, JobState | undefined> = Object.fromEntries(
  Object.entries(STATE_TO_WIRE).map(([name, wire]) => [wire, name as JobState]),
);

const MISFIRE_TO_WIRE: Record<MisfirePolicy, WireMisfirePolicy> = {
  'fire-once': WireMisfirePolicy.FIRE_ONCE,
  skip: WireMisfirePolicy.SKIP,
  'catch-up': WireMisfirePolicy.CATCH_UP,
};

const MISFIRE_FROM_WIRE: Record<number, MisfirePolicy | undefined> = Object.fromEntries(
  Object.entries(MISFIRE_TO_WIRE).map(([name, wire]) => [wire, name as MisfirePolicy]),
);

function misfireToWire(policy: MisfirePolicy | undefined): WireMisfirePolicy {
  if (policy === undefined) return WireMisfirePolicy.UNSPECIFIED;
  if (!Object.hasOwn(MISFIRE_TO_WIRE, policy)) throw invalid('misfirePolicy', `misfirePolicy must be one of ${MISFIRE_POLICIES.join(', ')}`);
  return MISFIRE_TO_WIRE[policy];
}

/** The CreateJob request for an input; throws `invalid-argument` naming the bad field. */
export function createJobRequest(input: CreateJobInput): CreateJobRequest {
  requireText(input.task, 'task');
  const hasRunAt = input.runAt !== undefined;
  const hasSchedule = input.schedule !== undefined;
  if (hasRunAt && hasSchedule) throw invalid('runAt', 'give either runAt or schedule, not both');
  if (!hasRunAt && !hasSchedule) throw invalid('runAt', 'one of runAt or schedule is required');
  const when: CreateJobRequest['when'] =
    input.runAt !== undefined
      ? { case: 'runAt', value: timestampFromDate(instant(input.runAt)) }
      : { case: 'schedule', value: input.schedule ?? '' };
  const misfirePolicy = misfireToWire(input.misfirePolicy);
  return create(CreateJobRequestSchema, {
    when,
    timezone: input.timezone ?? '',
    task: input.task,
    payload: input.payload === undefined ? {} : jsonObject(input.payload),
    name: input.name ?? '',
    maxAttempts: uint32(input.maxAttempts, 'maxAttempts'),
    timeoutSeconds: uint32(input.timeoutSeconds, 'timeoutSeconds'),
    misfirePolicy,
    idempotencyKey: input.idempotencyKey ?? '',
    ...(input.retry === undefined ? {} : { retry: retryRequest(input.retry) }),
    jitterMs: uint32(input.jitterMs, 'jitterMs'),
    pauseOnFailure: input.pauseOnFailure === true,
    overlapPolicy: overlapToWire(input.overlapPolicy),
    catchupWindowMs: windowToWire(input.catchupWindowMs ?? 0),
  });
}

/** A RetryPolicy message from the input: set fields only, checked for type. */
function retryRequest(retry: RetryPolicyInput): RetryPolicyInit {
  if (typeof retry !== 'object' || retry === null) throw invalid('retry', 'retry must be an object');
  const out: RetryPolicyInit = {};
  if (retry.initialIntervalMs !== undefined) out.initialIntervalMs = uint32(retry.initialIntervalMs, 'retry.initialIntervalMs');
  if (retry.maxIntervalMs !== undefined) out.maxIntervalMs = uint32(retry.maxIntervalMs, 'retry.maxIntervalMs');
  for (const field of ['multiplier', 'jitter'] as const) {
    const value = retry[field];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(`retry.${field}`, `retry.${field} must be a number`);
    out[field] = value;
  }
  return out;
}

/** The ListJobs filter fields; throws `invalid-argument` for an unknown state or bad limit. */
export function listJobsFilter(options: ListJobsOptions): {
  state: WireJobState;
  task: string;
  name: string;
  limit: number;
  cursor: string;
} {
  let state = WireJobState.UNSPECIFIED;
  if (options.state !== undefined) {
    if (!Object.hasOwn(STATE_TO_WIRE, options.state)) {
      throw invalid('state', `state must be one of ${JOB_STATES.join(', ')}`);
    }
    state = STATE_TO_WIRE[options.state];
  }
  return { state, task: options.task ?? '', name: options.name ?? '', limit: uint32(options.limit, 'limit'), cursor: options.cursor ?? '' };
}

export function jobFromWire(job: WireJob): Job {
  return {
    id: job.id,
    namespace: job.namespace,
    name: textOrNull(job.name),
    task: job.task,
    runAt: job.when.case === 'runAt' ? dateOrNull(job.when.value) : null,
    schedule: job.when.case === 'schedule' ? job.when.value : null,
    timezone: job.timezone,
    payload: job.payload ?? {},
    state: STATE_FROM_WIRE[job.state] ?? 'UNSPECIFIED',
    nextRunAt: dateOrNull(job.nextRunAt),
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    timeoutSeconds: job.timeoutSeconds,
    // The server never returns UNSPECIFIED; if it did (or a newer value), the default applies.
    misfirePolicy: MISFIRE_FROM_WIRE[job.misfirePolicy] ?? 'fire-once',
    overlapPolicy: OVERLAP_FROM_WIRE[job.overlapPolicy] ?? 'skip',
    catchupWindowMs: job.catchupWindowMs === 0n ? null : Number(job.catchupWindowMs),
    backfill: job.backfill === undefined ? null : { through: dateOrNull(job.backfill.through), resumeAt: dateOrNull(job.backfill.resumeAt) },
    idempotencyKey: textOrNull(job.idempotencyKey),
    leaseGeneration: counter(job.leaseGeneration),
    leaseOwner: textOrNull(job.leaseOwner),
    occurrenceAt: dateOrNull(job.occurrenceAt),
    retry: {
      initialIntervalMs: job.retry?.initialIntervalMs ?? 0,
      maxIntervalMs: job.retry?.maxIntervalMs ?? 0,
      multiplier: job.retry?.multiplier ?? 2,
      jitter: job.retry?.jitter ?? 0,
    },
    jitterMs: job.jitterMs,
    pauseOnFailure: job.pauseOnFailure,
    pausedReason: textOrNull(job.pausedReason),
    version: job.version,
    abort:
      job.abort === undefined
        ? null
        : { requestedAt: dateOrNull(job.abort.requestedAt), requestedBy: textOrNull(job.abort.requestedBy), stopSchedule: job.abort.stopSchedule },
    createdAt: dateOrNull(job.createdAt),
    updatedAt: dateOrNull(job.updatedAt),
  };
}

/** The job of a response that must carry one (GetJob, PauseJob, …). */
export function requiredJob(job: WireJob | undefined, call: string): Job {
  if (job === undefined) throw new KairosError(KairosErrorCode.Internal, `${call}: the response carried no job`);
  return jobFromWire(job);
}

function invalid(field: string, message: string): KairosError {
  return new KairosError(KairosErrorCode.InvalidArgument, message, { field });
}

export function requireText(value: unknown, field: string): void {
  if (typeof value !== 'string' || value === '') throw invalid(field, `${field} is required`);
}

// RFC 3339 date-time (the grammar JSON and gRPC timestamps use), with a zone.
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** An instant (`runAt`, `from`) as a Date: a valid Date, or an RFC 3339 string with a time zone. */
export function instant(value: Date | string, field = 'runAt'): Date {
  if (value instanceof Date) {
    if (Number.isNaN(value.getTime())) throw invalid(field, `${field} is an invalid Date`);
    return value;
  }
  const date = new Date(value);
  if (!RFC3339.test(value) || Number.isNaN(date.getTime())) {
    throw invalid(field, `${field} must be an RFC 3339 timestamp such as 2030-01-01T09:00:00Z, got "${value}"`);
  }
  return date;
}

/** An optional uint32 field; unset means 0 (the server's default). */
export function uint32(value: number | undefined, field: string): number {
  if (value === undefined) return 0;
  if (!Number.isInteger(value) || value < 0 || value > 0xffff_ffff) {
    throw invalid(field, `${field} must be a whole number from 0 to 4294967295, got ${value}`);
  }
  return value;
}

/**
 * The payload as the coordinator will store it: JSON. A round trip through
 * JSON drops `undefined` and turns Dates into strings, as a REST call would.
 */
function jsonObject(payload: unknown): JsonObject {
  let json: unknown;
  try {
    json = JSON.parse(JSON.stringify(payload) ?? 'null');
  } catch (cause: unknown) {
    throw new KairosError(KairosErrorCode.InvalidArgument, 'payload cannot be encoded as JSON', {
      field: 'payload',
      cause,
    });
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw invalid('payload', 'payload must be a JSON object');
  }
  return json as JsonObject;
}
