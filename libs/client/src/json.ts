/**
 * The JSON shape of each resource, as the REST API answers it (docs/openapi.json)
 * and the CLI's --json prints it: one shape everywhere. Objects of this client
 * (Dates, 0 for "none" where proto3 has no null) convert to it here; a test
 * compares the result with the REST answer for the same job, field by field.
 */
import type { Agent } from './agents';
import type { Job, JobState, MisfirePolicy, OverlapPolicy } from './jobs';
import type { Run, RunOutcome } from './runs';
import type { Token, TokenRole } from './tokens';
import type { Webhook, WebhookDelivery } from './webhooks';

type Instant = string;

export interface JobJson {
  jobId: string;
  namespace: string;
  name: string | null;
  task: string;
  schedule: string | null;
  runAt: Instant | null;
  timezone: string;
  payload: Job['payload'];
  state: JobState;
  nextRunAt: Instant | null;
  occurrenceAt: Instant | null;
  attempt: number;
  maxAttempts: number;
  timeoutSeconds: number | null;
  misfirePolicy: MisfirePolicy;
  idempotencyKey: string | null;
  leaseGeneration: number;
  leaseOwner: string | null;
  abort: { requestedAt: Instant; requestedBy: string | null; stopSchedule: boolean } | null;
  retry: { initialIntervalMs: number; maxIntervalMs: number; multiplier: number; jitter: number };
  jitterMs: number;
  pauseOnFailure: boolean;
  pausedReason: string | null;
  version: number;
  overlapPolicy: OverlapPolicy;
  catchupWindowMs: number | null;
  backfill: { through: Instant | null; resumeAt: Instant } | null;
  createdAt: Instant;
  updatedAt: Instant;
}

export interface RunJson {
  runId: string;
  jobId: string;
  attempt: number;
  leaseGeneration: number | null;
  scheduledFor: Instant;
  startedAt: Instant | null;
  finishedAt: Instant | null;
  outcome: RunOutcome;
  workerId: string | null;
  error: string | null;
  abortedBy: string | null;
  reason: string | null;
}

export interface AgentJson {
  agentId: string;
  namespace: string;
  quarantinedUntil: Instant | null;
  probation: boolean;
  tasks: string[];
  capacity: number;
  inFlight: number;
  draining: boolean;
  version: string;
  connectedAt: Instant;
  lastHeartbeatAt: Instant | null;
  coordinatorId: string;
}

export interface TokenJson {
  id: string;
  namespace: string;
  role: TokenRole;
  name: string | null;
  createdAt: Instant;
  expiresAt: Instant | null;
  revokedAt: Instant | null;
}

const EPOCH = new Date(0);

function iso(date: Date | null): Instant | null {
  return date === null ? null : date.toISOString();
}

/** An instant the coordinator always sets; the epoch if a message ever lacked it. */
function isoAlways(date: Date | null): Instant {
  return (date ?? EPOCH).toISOString();
}

export function jobJson(job: Job): JobJson {
  return {
    jobId: job.id,
    namespace: job.namespace,
    name: job.name,
    task: job.task,
    schedule: job.schedule,
    runAt: iso(job.runAt),
    timezone: job.timezone,
    payload: job.payload,
    state: job.state,
    nextRunAt: iso(job.nextRunAt),
    occurrenceAt: iso(job.occurrenceAt),
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    timeoutSeconds: job.timeoutSeconds === 0 ? null : job.timeoutSeconds,
    misfirePolicy: job.misfirePolicy,
    idempotencyKey: job.idempotencyKey,
    leaseGeneration: job.leaseGeneration,
    leaseOwner: job.leaseOwner,
    abort: job.abort === null ? null : { requestedAt: isoAlways(job.abort.requestedAt), requestedBy: job.abort.requestedBy, stopSchedule: job.abort.stopSchedule },
    retry: { ...job.retry },
    jitterMs: job.jitterMs,
    pauseOnFailure: job.pauseOnFailure,
    pausedReason: job.pausedReason,
    version: job.version,
    overlapPolicy: job.overlapPolicy,
    catchupWindowMs: job.catchupWindowMs,
    backfill: job.backfill === null ? null : { through: iso(job.backfill.through), resumeAt: isoAlways(job.backfill.resumeAt) },
    createdAt: isoAlways(job.createdAt),
    updatedAt: isoAlways(job.updatedAt),
  };
}

export function runJson(run: Run): RunJson {
  return {
    runId: run.runId,
    jobId: run.jobId,
    attempt: run.attempt,
    leaseGeneration: run.leaseGeneration === 0 ? null : run.leaseGeneration,
    scheduledFor: isoAlways(run.scheduledFor),
    startedAt: iso(run.startedAt),
    finishedAt: iso(run.finishedAt),
    outcome: run.outcome,
    workerId: run.workerId,
    error: run.error,
    abortedBy: run.abortedBy,
    reason: run.reason,
  };
}

export function agentJson(agent: Agent): AgentJson {
  return {
    agentId: agent.agentId,
    namespace: agent.namespace ?? '',
    quarantinedUntil: iso(agent.quarantinedUntil),
    probation: agent.probation,
    tasks: [...agent.tasks],
    capacity: agent.capacity,
    inFlight: agent.inFlight,
    draining: agent.draining,
    version: agent.version ?? '',
    connectedAt: isoAlways(agent.connectedAt),
    lastHeartbeatAt: iso(agent.lastHeartbeatAt),
    coordinatorId: agent.coordinatorId ?? '',
  };
}

/** A token of this client, or a row the CLI read from the store directly (same fields). */
export function tokenJson(token: Omit<Token, 'role'> & { role: string }): TokenJson {
  return {
    id: token.id,
    namespace: token.namespace,
    role: token.role as TokenRole,
    name: token.name,
    createdAt: isoAlways(token.createdAt),
    expiresAt: iso(token.expiresAt),
    revokedAt: iso(token.revokedAt),
  };
}

/** A webhook as REST answers it. */
export type WebhookJson = Omit<Webhook, 'createdAt'> & { createdAt: string };

export function webhookJson(webhook: Webhook): WebhookJson {
  return { ...webhook, events: [...webhook.events], createdAt: isoAlways(webhook.createdAt) };
}

/** A webhook delivery as REST answers it. */
export type DeliveryJson = Omit<WebhookDelivery, 'nextAttemptAt' | 'createdAt' | 'deliveredAt'> & {
  nextAttemptAt: string | null;
  createdAt: string;
  deliveredAt: string | null;
};

export function deliveryJson(delivery: WebhookDelivery): DeliveryJson {
  return { ...delivery, nextAttemptAt: iso(delivery.nextAttemptAt), createdAt: isoAlways(delivery.createdAt), deliveredAt: iso(delivery.deliveredAt) };
}
