/**
 * kairos.v1.JobService over gRPC: converts messages to the plain requests that
 * job-commands validates (so gRPC and REST accept and reject the same things)
 * and renders views as messages. Authentication, the permission each call
 * needs and the error mapping are grpc-unary.ts's.
 */
import { timestampFromDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import type { Logger } from 'pino';
import {
  DstMark,
  EditApplies,
  JobState,
  MisfirePolicy,
  OverlapPolicy,
  RunOutcome,
  type CreateJobRequest,
  type GrpcServiceImplementation,
  type JobService,
  type RetryPolicy,
  type ServiceMethods,
} from '@kairos/proto';
import type { AgentView } from './views';
import type { Authenticator } from './auth';
import { richStatus, traceparentOf, unaryHandlers } from './grpc-unary';
import type { JobCommands, JobView, OccurrenceView, RunView } from './job-commands';
import { ValidationError } from './validation';

type Impl = GrpcServiceImplementation<ServiceMethods<typeof JobService>>;

export function jobServiceImplementation(deps: {
  commands: JobCommands;
  /** The agents of a namespace, cluster-wide (dispatch/presence.ts). */
  agents: (namespace: string) => Promise<AgentView[]>;
  auth: Authenticator;
  logger: Logger;
}): Impl {
  const { commands } = deps;

  const unary = unaryHandlers(deps.auth, deps.logger);

  return {
    createJob: unary('write', async (req, namespace, _principal, metadata) => {
      const result = await commands.create(namespace, createJobBody(req), traceparentOf(metadata));
      return { jobId: result.job.jobId, created: result.created, job: toJobMessage(result.job) };
    }),
    createJobs: unary('write', async (req, namespace, _principal, metadata) => {
      const results = await commands.createMany(namespace, req.jobs, createJobBody, traceparentOf(metadata));
      return {
        results: results.map((result) =>
          result.kind === 'refused'
            ? { jobId: '', created: false, error: richStatus(result.error) }
            : { jobId: result.jobId, created: result.kind === 'created' },
        ),
      };
    }),
    getJob: unary('read', async (req, namespace) => ({ job: toJobMessage(await commands.get(namespace, req.jobId)) })),
    listJobs: unary('read', async (req, namespace) => {
      const query: Record<string, unknown> = {};
      if (JobState[req.state] === undefined) throw new ValidationError('state', `state ${req.state} is not a JobState value`);
      if (req.state !== JobState.UNSPECIFIED) query.state = JobState[req.state];
      if (req.task) query.task = req.task;
      if (req.name) query.name = req.name;
      if (req.limit) query.limit = req.limit;
      if (req.cursor) query.cursor = req.cursor;
      const page = await commands.list(namespace, query);
      return { jobs: page.jobs.map(toJobMessage), nextCursor: page.nextCursor ?? '' };
    }),
    cancelJob: unary('write', async (req, namespace) => {
      await commands.cancel(namespace, req.jobId);
      return {};
    }),
    updateJob: unary('write', async (req, namespace) => {
      const body: Record<string, unknown> = {};
      if (req.schedule !== undefined) body.schedule = req.schedule;
      if (req.timezone !== undefined) body.timezone = req.timezone;
      if (req.runAt) body.runAt = timestampText(req.runAt, 'runAt');
      if (req.payload) body.payload = req.payload;
      if (req.name !== undefined) body.name = req.name === '' ? null : req.name;
      if (req.maxAttempts !== undefined) body.maxAttempts = req.maxAttempts;
      if (req.timeoutSeconds !== undefined) body.timeoutSeconds = req.timeoutSeconds === 0 ? null : req.timeoutSeconds;
      const misfirePolicy = misfirePolicyName(req.misfirePolicy);
      if (misfirePolicy !== undefined) body.misfirePolicy = misfirePolicy;
      if (req.retry) body.retry = retryBody(req.retry);
      if (req.jitterMs !== undefined) body.jitterMs = req.jitterMs;
      if (req.pauseOnFailure !== undefined) body.pauseOnFailure = req.pauseOnFailure;
      const overlapPolicy = overlapPolicyName(req.overlapPolicy);
      if (overlapPolicy !== undefined) body.overlapPolicy = overlapPolicy;
      if (req.catchupWindowMs !== undefined) body.catchupWindowMs = req.catchupWindowMs === 0n ? null : Number(req.catchupWindowMs);
      const updated = await commands.update(namespace, req.jobId, body, req.expectedVersion);
      return {
        job: toJobMessage(updated.job),
        applies: updated.appliesFrom === 'now' ? EditApplies.NOW : EditApplies.NEXT_CLAIM,
      };
    }),
    startBackfill: unary('write', async (req, namespace) => {
      const body: Record<string, unknown> = {};
      if (req.from) body.from = timestampText(req.from, 'from');
      if (req.to) body.to = timestampText(req.to, 'to');
      const started = await commands.startBackfill(namespace, req.jobId, body);
      return { first: ts(started.first), last: ts(started.last), count: started.count, resumeAt: ts(started.resumeAt) };
    }),
    cancelBackfill: unary('write', async (req, namespace) => commands.cancelBackfill(namespace, req.jobId)),
    abortRun: unary('write', async (req, namespace, principal) => {
      const aborted = await commands.abort(namespace, req.jobId, { by: principal.actor, stopSchedule: req.stopSchedule });
      return {
        runId: aborted.runId ?? '',
        leaseGeneration: BigInt(aborted.leaseGeneration),
        agentId: aborted.agentId ?? '',
        requestedBy: aborted.requestedBy ?? '',
        stopSchedule: aborted.stopSchedule,
      };
    }),
    pauseJob: unary('write', async (req, namespace) => ({ job: toJobMessage(await commands.pause(namespace, req.jobId)) })),
    resumeJob: unary('write', async (req, namespace) => ({ job: toJobMessage(await commands.resume(namespace, req.jobId)) })),
    triggerJob: unary('write', async (req, namespace) => ({ job: toJobMessage(await commands.trigger(namespace, req.jobId)) })),
    listRuns: unary('read', async (req, namespace) => {
      const page = await commands.runs(namespace, req.jobId, { limit: req.limit || undefined, cursor: req.cursor || undefined });
      return { runs: page.runs.map(toRunMessage), nextCursor: page.nextCursor ?? '' };
    }),
    previewSchedule: unary('read', async (req) => {
      const body: Record<string, unknown> = { schedule: req.schedule };
      if (req.timezone) body.timezone = req.timezone;
      if (req.count) body.count = req.count;
      if (req.from) body.from = timestampText(req.from, 'from');
      const preview = commands.preview(body);
      return { schedule: preview.schedule ?? '', timezone: preview.timezone, occurrences: preview.occurrences.map(toOccurrenceMessage) };
    }),
    listUpcoming: unary('read', async (req, namespace) => {
      const upcoming = await commands.upcoming(namespace, req.jobId, req.count === 0 ? undefined : req.count);
      return {
        jobId: upcoming.jobId,
        schedule: upcoming.schedule ?? '',
        timezone: upcoming.timezone,
        occurrences: upcoming.occurrences.map(toOccurrenceMessage),
      };
    }),
    listAgents: unary('read', async (_req, namespace) => ({
      agents: (await deps.agents(namespace)).map((agent) => ({
        agentId: agent.agentId,
        tasks: agent.tasks,
        capacity: agent.capacity,
        inFlight: agent.inFlight,
        connectedAt: timestampFromDate(new Date(agent.connectedAt)),
        ...(agent.lastHeartbeatAt ? { lastHeartbeatAt: timestampFromDate(new Date(agent.lastHeartbeatAt)) } : {}),
        draining: agent.draining,
        version: agent.version,
        coordinatorId: agent.coordinatorId,
        namespace: agent.namespace,
        ...(agent.quarantinedUntil ? { quarantinedUntil: timestampFromDate(new Date(agent.quarantinedUntil)) } : {}),
        probation: agent.probation,
      })),
    })),
  } satisfies Impl;
}

/** The set fields of a RetryPolicy message, as the REST body's `retry`. */
function retryBody(retry: RetryPolicy): Record<string, number> {
  const body: Record<string, number> = {};
  if (retry.initialIntervalMs !== undefined) body.initialIntervalMs = retry.initialIntervalMs;
  if (retry.maxIntervalMs !== undefined) body.maxIntervalMs = retry.maxIntervalMs;
  if (retry.multiplier !== undefined) body.multiplier = retry.multiplier;
  if (retry.jitter !== undefined) body.jitter = retry.jitter;
  return body;
}

const MISFIRE_POLICY_VALUES: Record<JobView['misfirePolicy'], MisfirePolicy> = {
  skip: MisfirePolicy.SKIP,
  'fire-once': MisfirePolicy.FIRE_ONCE,
  'catch-up': MisfirePolicy.CATCH_UP,
};

const OVERLAP_POLICY_VALUES: Record<JobView['overlapPolicy'], OverlapPolicy> = {
  skip: OverlapPolicy.SKIP,
  'buffer-one': OverlapPolicy.BUFFER_ONE,
  'buffer-all': OverlapPolicy.BUFFER_ALL,
  'cancel-other': OverlapPolicy.CANCEL_OTHER,
};

/** The name of a MisfirePolicy value; undefined for UNSPECIFIED; a ValidationError for an unknown number. */
function misfirePolicyName(value: MisfirePolicy): JobView['misfirePolicy'] | undefined {
  if (value === MisfirePolicy.UNSPECIFIED) return undefined;
  const name = (Object.keys(MISFIRE_POLICY_VALUES) as Array<JobView['misfirePolicy']>).find((key) => MISFIRE_POLICY_VALUES[key] === value);
  if (name === undefined) throw new ValidationError('misfirePolicy', `misfirePolicy ${value} is not a MisfirePolicy value`);
  return name;
}

/** The name of an OverlapPolicy value; undefined for UNSPECIFIED; a ValidationError for an unknown number. */
function overlapPolicyName(value: OverlapPolicy): JobView['overlapPolicy'] | undefined {
  if (value === OverlapPolicy.UNSPECIFIED) return undefined;
  const name = (Object.keys(OVERLAP_POLICY_VALUES) as Array<JobView['overlapPolicy']>).find((key) => OVERLAP_POLICY_VALUES[key] === value);
  if (name === undefined) throw new ValidationError('overlapPolicy', `overlapPolicy ${value} is not an OverlapPolicy value`);
  return name;
}

/** Largest Timestamp.seconds RFC 3339 can write (9999-12-31T23:59:59Z); the range check itself is parseRunAt's. */
const MAX_TIMESTAMP_SECONDS = 253_402_300_799n;

/** A CreateJobRequest as the POST /jobs body job-commands validates (proto zero values: absent). */
function createJobBody(req: CreateJobRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { task: req.task };
  if (req.when.case === 'runAt') body.runAt = timestampText(req.when.value, 'runAt');
  if (req.when.case === 'schedule') body.schedule = req.when.value;
  if (req.timezone) body.timezone = req.timezone;
  if (req.payload) body.payload = req.payload;
  if (req.name) body.name = req.name;
  if (req.maxAttempts) body.maxAttempts = req.maxAttempts;
  if (req.timeoutSeconds) body.timeoutSeconds = req.timeoutSeconds;
  const misfirePolicy = misfirePolicyName(req.misfirePolicy);
  if (misfirePolicy !== undefined) body.misfirePolicy = misfirePolicy;
  if (req.idempotencyKey) body.idempotencyKey = req.idempotencyKey;
  if (req.retry) body.retry = retryBody(req.retry);
  if (req.jitterMs) body.jitterMs = req.jitterMs;
  if (req.pauseOnFailure) body.pauseOnFailure = true;
  const overlapPolicy = overlapPolicyName(req.overlapPolicy);
  if (overlapPolicy !== undefined) body.overlapPolicy = overlapPolicy;
  if (req.catchupWindowMs) body.catchupWindowMs = Number(req.catchupWindowMs);
  return body;
}

/** A Timestamp as RFC 3339 text for the shared validation, or a ValidationError naming `field`. */
function timestampText(timestamp: Timestamp, field: string): string {
  const { seconds, nanos } = timestamp;
  if (seconds < 0n || seconds > MAX_TIMESTAMP_SECONDS || nanos < 0 || nanos > 999_999_999) {
    throw new ValidationError(field, `${field} must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z (seconds ${seconds}, nanos ${nanos})`);
  }
  return new Date(Number(seconds) * 1000 + Math.floor(nanos / 1_000_000)).toISOString();
}

function ts(iso: string | null) {
  return iso ? timestampFromDate(new Date(iso)) : undefined;
}

function toJobMessage(job: JobView) {
  return {
    id: job.jobId,
    namespace: job.namespace,
    name: job.name ?? '',
    task: job.task,
    when: job.schedule
      ? { case: 'schedule' as const, value: job.schedule }
      : { case: 'runAt' as const, value: timestampFromDate(new Date(job.runAt!)) },
    timezone: job.timezone,
    payload: (job.payload ?? {}) as Record<string, never>,
    state: JobState[job.state],
    nextRunAt: ts(job.nextRunAt),
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    timeoutSeconds: job.timeoutSeconds ?? 0,
    misfirePolicy: MISFIRE_POLICY_VALUES[job.misfirePolicy],
    overlapPolicy: OVERLAP_POLICY_VALUES[job.overlapPolicy],
    catchupWindowMs: BigInt(job.catchupWindowMs ?? 0),
    idempotencyKey: job.idempotencyKey ?? '',
    leaseGeneration: BigInt(job.leaseGeneration),
    leaseOwner: job.leaseOwner ?? '',
    occurrenceAt: ts(job.occurrenceAt),
    createdAt: ts(job.createdAt),
    updatedAt: ts(job.updatedAt),
    retry: job.retry,
    jitterMs: job.jitterMs,
    pauseOnFailure: job.pauseOnFailure,
    pausedReason: job.pausedReason ?? '',
    version: job.version,
    ...(job.backfill ? { backfill: { through: ts(job.backfill.through), resumeAt: ts(job.backfill.resumeAt) } } : {}),
    ...(job.abort
      ? {
          abort: {
            requestedAt: ts(job.abort.requestedAt),
            requestedBy: job.abort.requestedBy ?? '',
            stopSchedule: job.abort.stopSchedule,
          },
        }
      : {}),
  };
}

const DST_MARKS: Record<NonNullable<OccurrenceView['dst']>, DstMark> = {
  'gap-shifted': DstMark.GAP_SHIFTED,
  'repeated-first': DstMark.REPEATED_FIRST,
  'repeated-elapsed': DstMark.REPEATED_ELAPSED,
};

function toOccurrenceMessage(occurrence: OccurrenceView) {
  return {
    at: ts(occurrence.at),
    local: occurrence.local,
    offset: occurrence.offset,
    dst: occurrence.dst === null ? DstMark.UNSPECIFIED : DST_MARKS[occurrence.dst],
    scheduledLocal: occurrence.scheduledLocal ?? '',
  };
}

function toRunMessage(run: RunView) {
  return {
    runId: run.runId,
    jobId: run.jobId,
    attempt: run.attempt,
    leaseGeneration: BigInt(run.leaseGeneration ?? 0),
    scheduledFor: ts(run.scheduledFor),
    startedAt: ts(run.startedAt),
    finishedAt: ts(run.finishedAt),
    outcome: RunOutcome[run.outcome],
    workerId: run.workerId ?? '',
    error: run.error ?? '',
    abortedBy: run.abortedBy ?? '',
    reason: run.reason ?? '',
  };
}
