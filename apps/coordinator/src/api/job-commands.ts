/**
 * What the job API does, independent of transport: REST (rest.ts) and gRPC
 * (grpc-jobs.ts) parse their requests into these calls and render the results.
 * Expected refusals leave here as ApiError with the kind that errors.ts maps.
 */
import { parseCron, previewOccurrences, type CronSchedule, type PreviewedOccurrence } from '@kairos/schedule';
import { effectiveRetry, type JobRecord, type NewJob, type RetryPolicy, type RunRecord, type Store, type WithdrawOutcome, type ControlResult } from '@kairos/store';
import { SpanKind, type Tracing } from '@kairos/tracing';
import { ApiError, toApiError } from './errors';
import type { PayloadSchemas } from './payload-schemas';
import type { AbortView, BackfillView, JobView, PreviewView, RunView } from './views';
import {
  checkBatchSize,
  parseBackfill,
  parseCount,
  parseCreateJob,
  parseEditJob,
  parseExpectedVersion,
  parseId,
  parseListJobs,
  parseListRuns,
  parsePreview,
  ValidationError,
} from './validation';

export type { AbortView, BackfillView, JobView, OccurrenceView, PreviewView, RunView } from './views';

/** One item of a batch create: the job made or found by its key, or why the item was refused. */
export type BatchItemResult = { kind: 'created' | 'existing'; jobId: string } | { kind: 'refused'; error: ApiError };

export interface JobCommands {
  /** `traceparent`: the caller's W3C trace context (a header or metadata), if it sent one. */
  create(namespace: string, body: unknown, traceparent?: string): Promise<{ created: boolean; job: JobView }>;
  /**
   * Creates up to LIMITS.batchJobs jobs in one transaction, each judged on its
   * own: answers in the items' order. `toBody` turns an item into a POST /jobs
   * body (gRPC converts a message); what it throws refuses that item only.
   */
  createMany<T>(namespace: string, items: readonly T[], toBody: (item: T) => unknown, traceparent?: string): Promise<BatchItemResult[]>;
  get(namespace: string, jobId: string): Promise<JobView>;
  list(namespace: string, query: Record<string, unknown>): Promise<{ jobs: JobView[]; nextCursor: string | null }>;
  cancel(namespace: string, jobId: string): Promise<void>;
  /**
   * Changes a job in place. `expectedVersion` (If-Match, gRPC expected_version)
   * makes it conditional: a job at another version is refused (version_mismatch).
   */
  update(
    namespace: string,
    jobId: string,
    body: unknown,
    expectedVersion?: unknown,
  ): Promise<{ job: JobView; appliesFrom: 'now' | 'next-claim' }>;
  /** Runs a recurring job's occurrences in [from, to) in order, one at a time. */
  startBackfill(namespace: string, jobId: string, body: unknown): Promise<BackfillView>;
  /** Stops a backfill: a waiting job resumes its schedule at once, a running backfill run finishes first. */
  cancelBackfill(namespace: string, jobId: string): Promise<{ finishing: boolean }>;
  /** Asks the agent running the job to stop; `by` names the caller (Principal.actor). */
  abort(namespace: string, jobId: string, input: { by: string; stopSchedule: boolean }): Promise<AbortView>;
  /** The next occurrences of a schedule, marked where DST moved them. */
  preview(body: unknown): PreviewView;
  /** The next occurrences of a job, starting with the one it is waiting to serve. */
  upcoming(namespace: string, jobId: string, count: unknown): Promise<PreviewView & { jobId: string }>;
  pause(namespace: string, jobId: string): Promise<JobView>;
  resume(namespace: string, jobId: string): Promise<JobView>;
  trigger(namespace: string, jobId: string): Promise<JobView>;
  /** One page of a job's runs; `query` is the request's `{limit, cursor}` as sent (validation.ts parseListRuns). */
  runs(namespace: string, jobId: string, query?: Record<string, unknown>): Promise<{ runs: RunView[]; nextCursor: string | null }>;
}

export interface JobCommandDeps {
  store: Store;
  /** Pokes the local dispatcher when a change may have made a job due sooner. */
  onJobsDue: () => void;
  /** Counts an abort taken. */
  onAbort: () => void;
  /** Counts a withdrawal of a pre-dispatched job by how it ended. */
  onWithdrawal?: (result: WithdrawOutcome) => void;
  /** How long a cancel, pause or edit of a pre-dispatched job waits for its holder to give it back (KAIROS_WITHDRAW_WAIT_MS). */
  withdrawWaitMs?: number;
  /** The coordinator's retry defaults (KAIROS_RETRY_BASE_MS, KAIROS_RETRY_CAP_MS), shown where a job has none of its own: the store's policy. */
  retryDefaults: RetryPolicy;
  /** Payload checks against schemas agents advertised for SDK tasks. */
  payloadSchemas: Pick<PayloadSchemas, 'check'>;
  /** Spans for creates; the create's trace context is stored with the job (libs/tracing). */
  tracing: Tracing;
}

export function jobCommands(deps: JobCommandDeps): JobCommands {
  const { store, onJobsDue, onAbort, payloadSchemas, retryDefaults, tracing } = deps;
  const withdrawWaitMs = deps.withdrawWaitMs ?? 2_000;
  const jobView = (job: JobRecord) => toJobView(job, retryDefaults);
  /** The job, or not_found; `jobId` is the caller's (parsed here), named in the error as sent. */
  async function mustGetRecord(namespace: string, jobId: string): Promise<JobRecord> {
    const job = await store.jobs.get(namespace, parseId(jobId));
    if (!job) throw notFound(jobId);
    return job;
  }
  async function mustGet(namespace: string, jobId: string): Promise<JobView> {
    return jobView(await mustGetRecord(namespace, jobId));
  }

  /**
   * Asks the holder of a pre-dispatched job (claimed ahead of its due instant)
   * to give it back before a cancel, pause or edit applies
   * (docs/decisions/0021-pre-dispatched-leases.md). `withdrawn`: the job is
   * DUE and held for this caller (the change must follow, or `releaseHold`);
   * `moved`: it changed otherwise, read it again; `refused` (its run started)
   * or `timed-out`: the holder keeps it; `not-pre-dispatched`: nothing asked.
   */
  async function withdraw(namespace: string, id: string): Promise<WithdrawOutcome | 'not-pre-dispatched'> {
    const request = await store.lease.requestWithdraw(namespace, id);
    if (request.kind !== 'requested') return 'not-pre-dispatched';
    const outcome = await store.lease.awaitWithdrawal(id, request.leaseGeneration, withdrawWaitMs);
    deps.onWithdrawal?.(outcome);
    return outcome;
  }

  /** Applies `change`; when a withdrawal left the job held for us (`held`), the hold ends if the change throws or does not apply. */
  async function applyHeld<R>(namespace: string, id: string, held: boolean, change: () => Promise<R>, applied: (result: R) => boolean): Promise<R> {
    let result: R;
    try {
      result = await change();
    } catch (error: unknown) {
      if (held) await store.lease.releaseHold(namespace, id).catch(() => undefined);
      throw error;
    }
    if (held && !applied(result)) await store.lease.releaseHold(namespace, id);
    return result;
  }

  /**
   * `result` is a cancel's or pause's refusal; `claimed(result)` when the job
   * was CLAIMED. A pre-dispatched job is asked back, and `change` tried again
   * once it was given back (or moved on otherwise), at most twice.
   * `unanswered`: the holder did not answer in time.
   */
  async function retryAfterWithdrawal<R>(
    namespace: string,
    id: string,
    result: R,
    claimed: (result: R) => boolean,
    change: () => Promise<R>,
  ): Promise<{ result: R; unanswered: boolean }> {
    let unanswered = false;
    for (let tries = 0; claimed(result) && tries < 2; tries++) {
      const outcome = await withdraw(namespace, id);
      unanswered = outcome === 'timed-out';
      if (outcome !== 'withdrawn' && outcome !== 'moved') break;
      result = await applyHeld(namespace, id, outcome === 'withdrawn', change, (next) => !claimed(next));
    }
    return { result, unanswered };
  }

  async function control(
    namespace: string,
    jobId: string,
    verb: 'pause' | 'resume' | 'trigger',
  ): Promise<JobView> {
    const id = parseId(jobId);
    let result = await store.lease[verb](namespace, id);
    if (verb === 'pause') {
      // A pre-dispatched job is paused as if it were still waiting, once its holder gave it back.
      const claimed = (r: ControlResult) => r.kind === 'conflict' && r.state === 'CLAIMED';
      ({ result } = await retryAfterWithdrawal(namespace, id, result, claimed, () => store.lease.pause(namespace, id)));
    }
    switch (result.kind) {
      case 'done': {
        // The answer is the job as read right after the change, before this call wakes the
        // dispatcher. The change's own NOTIFY (jobs_notify_due) can still wake a claim first, so a
        // resumed or triggered job due within the moment may already read CLAIMED (docs/api.md).
        const view = await mustGet(namespace, jobId);
        if (verb !== 'pause') onJobsDue();
        return view;
      }
      case 'not-found':
        throw notFound(jobId);
      case 'conflict':
        throw new ApiError('failed_precondition', `cannot ${verb} a job that is ${result.state}`, undefined, { state: result.state }, 'JOB_STATE_CONFLICT');
      default:
        return assertNever(result);
    }
  }

  return {
    async create(namespace, body, traceparent) {
      const input = parseCreateJob(body);
      await payloadSchemas.check(namespace, input.task, input.payload);
      const span = tracing.startSpan('kairos.job.create', { parent: traceparent ?? null, kind: SpanKind.SERVER, attributes: { 'kairos.namespace': namespace, 'kairos.task': input.task } });
      let result: Awaited<ReturnType<Store['jobs']['create']>>;
      try {
        result = await store.jobs.create({ namespace, ...input, traceParent: span.traceparent });
        span.setAttributes(result.kind === 'conflict' ? { 'kairos.job.id': result.jobId } : { 'kairos.job.id': result.job.id, 'kairos.job.created': result.kind === 'created' });
      } finally {
        span.end();
      }
      switch (result.kind) {
        case 'created':
          onJobsDue();
          return { created: true, job: jobView(result.job) };
        case 'existing':
          return { created: false, job: jobView(result.job) };
        case 'conflict':
          throw new ApiError(
            'already_exists',
            `idempotencyKey was already used for a different request (job ${result.jobId})`,
            'idempotencyKey',
            { jobId: result.jobId },
          );
        default:
          return assertNever(result);
      }
    },
    async createMany(namespace, items, toBody, traceparent) {
      checkBatchSize(items);
      const results: Array<BatchItemResult | null> = items.map(() => null);
      const accepted: Array<{ index: number; input: NewJob }> = [];
      // One at a time: the payload-schema cache fills on the first item of a task and serves the rest.
      for (const [index, item] of items.entries()) {
        try {
          const input = parseCreateJob(toBody(item));
          await payloadSchemas.check(namespace, input.task, input.payload);
          accepted.push({ index, input: { namespace, ...input } });
        } catch (error: unknown) {
          // A refusal is the item's answer; anything else (the store down, a bug) fails the call.
          if (!(error instanceof ApiError || error instanceof ValidationError)) throw error;
          results[index] = { kind: 'refused', error: toApiError(error, () => undefined) };
        }
      }
      const span = tracing.startSpan('kairos.jobs.create_batch', { parent: traceparent ?? null, kind: SpanKind.SERVER, attributes: { 'kairos.namespace': namespace, 'kairos.batch.size': items.length } });
      const stored = await store.jobs
        .createMany(accepted.map((item) => ({ ...item.input, traceParent: span.traceparent })))
        .finally(() => span.end());
      for (const [position, outcome] of stored.entries()) {
        const { index } = accepted[position]!;
        results[index] =
          outcome.kind === 'conflict'
            ? { kind: 'refused', error: keyReused(outcome.jobId) }
            : { kind: outcome.kind, jobId: outcome.jobId };
      }
      if (stored.some((outcome) => outcome.kind === 'created')) onJobsDue();
      return results.map((result) => result!);
    },
    get: mustGet,
    async list(namespace, query) {
      const filter = parseListJobs(query);
      const page = await store.jobs.list(namespace, {
        limit: filter.limit,
        ...(filter.state ? { state: filter.state } : {}),
        ...(filter.task ? { task: filter.task } : {}),
        ...(filter.name ? { namePrefix: filter.name } : {}),
        ...(filter.cursor ? { after: filter.cursor } : {}),
      });
      return { jobs: page.jobs.map(jobView), nextCursor: page.nextAfter };
    },
    async cancel(namespace, jobId) {
      const id = parseId(jobId);
      // Claimed ahead of its due instant (pre-dispatched): cancelled once its holder has given it back unstarted.
      const { result, unanswered } = await retryAfterWithdrawal(
        namespace,
        id,
        await store.lease.cancel(namespace, id),
        (r) => r.kind === 'claimed',
        () => store.lease.cancel(namespace, id),
      );
      switch (result.kind) {
        case 'cancelled':
        case 'already-cancelled':
          return;
        case 'not-found':
          throw notFound(jobId);
        case 'claimed':
          throw new ApiError(
            'failed_precondition',
            unanswered
              ? `job is pre-dispatched to ${result.leaseOwner ?? 'an agent'} (run ${result.runId ?? '?'}, fencing token ${result.leaseGeneration}), which did not confirm within ${withdrawWaitMs} ms that it had not started it, so it cannot be cancelled; abort the run with POST /jobs/${jobId}/abort (gRPC AbortRun, CLI "kairos jobs abort")`
              : `job is claimed by ${result.leaseOwner ?? 'an agent'} (run ${result.runId ?? '?'}, fencing token ${result.leaseGeneration}): it is running or about to run, so it cannot be cancelled; abort the run with POST /jobs/${jobId}/abort (gRPC AbortRun, CLI "kairos jobs abort")`,
            undefined,
            {
              state: 'CLAIMED',
              runId: result.runId === null ? null : String(result.runId),
              leaseOwner: result.leaseOwner,
              leaseGeneration: result.leaseGeneration,
              leaseUntil: result.leaseUntil?.toISOString() ?? null,
              abort: `POST /jobs/${jobId}/abort`,
            },
            'JOB_CLAIMED',
          );
        case 'finished':
          throw new ApiError('failed_precondition', `job already finished (${result.state})`, undefined, { state: result.state }, 'JOB_FINISHED');
        default:
          return assertNever(result);
      }
    },
    async update(namespace, jobId, body, ifMatch) {
      const id = parseId(jobId);
      const expectedVersion = parseExpectedVersion(ifMatch);
      const current = await mustGetRecord(namespace, jobId);
      const edit = parseEditJob(body, current);
      if (edit.payload !== undefined) await payloadSchemas.check(namespace, current.task, edit.payload as Record<string, unknown>);
      // A pre-dispatched job is edited as if it were still waiting, once its holder gave it back;
      // a holder that keeps it (started) or does not answer leaves the edit for the next claim.
      const withdrawal = current.state === 'CLAIMED' ? await withdraw(namespace, id) : 'not-pre-dispatched';
      const result = await applyHeld(
        namespace,
        id,
        withdrawal === 'withdrawn',
        () => store.lease.edit(namespace, id, edit, expectedVersion === undefined ? {} : { expectedVersion }),
        (r) => r.kind === 'updated',
      );
      switch (result.kind) {
        case 'updated':
          onJobsDue();
          return { job: await mustGet(namespace, id), appliesFrom: result.appliesFrom };
        case 'not-found':
          throw notFound(jobId);
        case 'version-mismatch':
          throw new ApiError(
            'version_mismatch',
            `job ${jobId} is at version ${result.version}, not ${expectedVersion}: someone else changed it; read it again and re-apply your change`,
            'If-Match',
            { version: result.version },
          );
        case 'refused':
          throw new ApiError('failed_precondition', result.message, result.field, { state: result.state }, 'EDIT_REFUSED');
        default:
          return assertNever(result);
      }
    },
    async startBackfill(namespace, jobId, body) {
      const id = parseId(jobId);
      const range = parseBackfill(body);
      const result = await store.lease.startBackfill(namespace, id, range);
      switch (result.kind) {
        case 'started':
          onJobsDue();
          return {
            jobId: id,
            first: result.first.toISOString(),
            last: result.last.toISOString(),
            count: result.count,
            resumeAt: result.resumeAt.toISOString(),
          };
        case 'not-found':
          throw notFound(jobId);
        case 'refused':
          if (!result.conflict) throw new ApiError('invalid_argument', result.message, result.field);
          throw new ApiError('failed_precondition', result.message, undefined, { state: result.state }, 'BACKFILL_REFUSED');
        default:
          return assertNever(result);
      }
    },
    async cancelBackfill(namespace, jobId) {
      const result = await store.lease.cancelBackfill(namespace, parseId(jobId));
      switch (result.kind) {
        case 'cancelled':
          onJobsDue();
          return { finishing: result.finishing };
        case 'none':
          throw new ApiError('failed_precondition', 'no backfill of this job is running', undefined, { backfill: null }, 'NO_BACKFILL');
        case 'not-found':
          throw notFound(jobId);
        default:
          return assertNever(result);
      }
    },
    async abort(namespace, jobId, input) {
      const result = await store.lease.abort(namespace, parseId(jobId), input);
      switch (result.kind) {
        case 'requested':
          onAbort();
          return {
            runId: result.runId === null ? null : String(result.runId),
            jobId,
            leaseGeneration: result.leaseGeneration,
            agentId: result.leaseOwner,
            requestedBy: result.requestedBy,
            requestedAt: result.requestedAt.toISOString(),
            stopSchedule: result.stopSchedule,
          };
        case 'not-found':
          throw notFound(jobId);
        case 'not-running':
          throw new ApiError(
            'failed_precondition',
            `nothing to abort: the job is ${result.state}, not running`,
            undefined,
            { state: result.state },
            'NOTHING_RUNNING',
          );
        default:
          return assertNever(result);
      }
    },
    preview(body) {
      const input = parsePreview(body);
      return previewView(input.cron, previewOccurrences(input.cron, input.from ?? new Date(), input.count));
    },
    async upcoming(namespace, jobId, countValue) {
      const count = parseCount(countValue);
      const job = await mustGetRecord(namespace, jobId);
      return { jobId: job.id, ...upcomingOf(job, count, new Date()) };
    },
    pause: (namespace, jobId) => control(namespace, jobId, 'pause'),
    resume: (namespace, jobId) => control(namespace, jobId, 'resume'),
    trigger: (namespace, jobId) => control(namespace, jobId, 'trigger'),
    async runs(namespace, jobId, query = {}) {
      const { limit, afterRunId } = parseListRuns(query);
      const runs = await store.runs.list(namespace, parseId(jobId), { limit: limit + 1, afterRunId });
      if (runs === null) throw notFound(jobId);
      const page = runs.slice(0, limit);
      return { runs: page.map(runView), nextCursor: runs.length > limit ? String(page[page.length - 1]!.runId) : null };
    },
  };
}

function previewView(cron: CronSchedule, occurrences: readonly PreviewedOccurrence[]): PreviewView {
  return {
    schedule: cron.expression,
    timezone: cron.timezone,
    occurrences: occurrences.map((o) => ({ at: o.at.toISOString(), local: o.local, offset: o.offset, dst: o.dst, scheduledLocal: o.scheduledLocal })),
  };
}

/**
 * A job's upcoming occurrences: a DUE job's start with the one it waits to
 * serve (late or retried included); a CLAIMED job's with the one after the
 * running one; a PAUSED job's from now. Finished jobs have none; a one-off
 * job's only occurrence is its runAt.
 */
function upcomingOf(job: JobRecord, count: number, now: Date): PreviewView {
  const pending = job.state === 'DUE' || job.state === 'CLAIMED' || job.state === 'PAUSED';
  if (job.schedule === null) {
    const runAt = job.runAt;
    const occurrences =
      (job.state === 'DUE' || job.state === 'PAUSED') && runAt !== null
        ? [{ at: runAt.toISOString(), local: runAt.toISOString().slice(0, 19), offset: '+00:00', dst: null, scheduledLocal: null }]
        : [];
    return { schedule: null, timezone: job.timezone, occurrences };
  }
  const cron = parseCron(job.schedule, job.timezone);
  if (!pending) return previewView(cron, []);
  const occurrenceAt = job.occurrenceAt ?? now;
  const from =
    job.state === 'DUE' ? occurrenceAt : job.state === 'CLAIMED' ? new Date(occurrenceAt.getTime() + 1) : now;
  return previewView(cron, previewOccurrences(cron, from, count));
}

function keyReused(jobId: string): ApiError {
  return new ApiError('already_exists', `idempotencyKey was already used for a different request (job ${jobId})`, 'idempotencyKey', { jobId });
}

function notFound(jobId: string): ApiError {
  return new ApiError('not_found', `job ${jobId} not found`, undefined, undefined, 'JOB_NOT_FOUND');
}

function iso(date: Date | null): string | null {
  return date ? date.toISOString() : null;
}

export function toJobView(job: JobRecord, defaults: RetryPolicy): JobView {
  const retry = effectiveRetry(job.retry, defaults);
  return {
    jobId: job.id,
    namespace: job.namespace,
    name: job.name,
    task: job.task,
    schedule: job.schedule,
    runAt: iso(job.runAt),
    timezone: job.timezone,
    payload: job.payload as Record<string, unknown>,
    state: job.state,
    nextRunAt: iso(job.nextRunAt),
    occurrenceAt: iso(job.occurrenceAt),
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    timeoutSeconds: job.timeoutMs === null ? null : job.timeoutMs / 1000,
    misfirePolicy: job.misfirePolicy,
    idempotencyKey: job.idempotencyKey,
    leaseGeneration: job.leaseGeneration,
    leaseOwner: job.leaseOwner,
    abort:
      job.abort === null
        ? null
        : { requestedAt: job.abort.requestedAt.toISOString(), requestedBy: job.abort.requestedBy, stopSchedule: job.abort.stopSchedule },
    retry: { initialIntervalMs: retry.initialMs, maxIntervalMs: retry.maxMs, multiplier: retry.multiplier, jitter: retry.jitter },
    jitterMs: job.startJitterMs,
    pauseOnFailure: job.pauseOnFailure,
    pausedReason: job.pausedReason,
    version: job.version,
    overlapPolicy: job.overlapPolicy,
    catchupWindowMs: job.catchupWindowMs,
    backfill: job.backfill === null ? null : { through: iso(job.backfill.through), resumeAt: job.backfill.resumeAt.toISOString() },
    createdAt: job.createdAt.toISOString(),
    updatedAt: job.updatedAt.toISOString(),
  };
}

export function runView(run: RunRecord): RunView {
  return {
    runId: String(run.runId),
    jobId: run.jobId,
    attempt: run.attempt,
    leaseGeneration: run.leaseGeneration,
    scheduledFor: run.scheduledFor.toISOString(),
    startedAt: iso(run.startedAt),
    finishedAt: iso(run.finishedAt),
    outcome: run.outcome,
    workerId: run.workerId,
    error: run.error,
    abortedBy: run.abortedBy,
    reason: run.reason,
  };
}

export function assertNever(value: never): never {
  throw new Error(`unexpected value ${JSON.stringify(value)}`);
}
