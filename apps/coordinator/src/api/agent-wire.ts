/**
 * The agent stream's wire messages <-> the store's types, both directions.
 * The dispatcher speaks store types only; this is the one place that knows
 * the protobuf shapes of assignments, renew statuses and outcome acks (the
 * agent has the mirror image in apps/agent/src/session/wire.ts).
 *
 * Every field an agent sends is checked here, at the edge, before it can reach
 * a batch statement: a lease reference that is not well formed (a job id that
 * is not a uuid, a generation of 0 or beyond 2^53) is answered on its own and
 * never shares a statement with other agents' leases.
 */
import {
  HandlerResult,
  LeaseLostReason,
  OutcomeAckResult,
  timestampMessage,
  type Assignment,
  type OutcomeAck,
  type LeaseOutcome,
  type LeaseRef as WireLeaseRef,
  type LeaseStatus,
} from '@kairos/proto';
import type { ClaimedJob, CompleteResult, CompletionReport, LeaseRef, RenewResult } from '@kairos/store';
import { isJobId } from '@kairos/store';

/** A lease as the agent named it: well formed (`ref`), or refused at the edge with the values it sent. */
export type WireLease = { kind: 'ok'; ref: LeaseRef } | { kind: 'malformed'; jobId: string; leaseGeneration: bigint };

const MAX_GENERATION = BigInt(Number.MAX_SAFE_INTEGER);

export function leaseFromWire({ jobId, leaseGeneration }: Pick<WireLeaseRef, 'jobId' | 'leaseGeneration'>): WireLease {
  if (!isJobId(jobId) || leaseGeneration < 1n || leaseGeneration > MAX_GENERATION) {
    return { kind: 'malformed', jobId: jobId.slice(0, 64), leaseGeneration };
  }
  return { kind: 'ok', ref: { jobId: jobId.toLowerCase(), leaseGeneration: Number(leaseGeneration) } };
}

/** Release.reason kept at most (characters). */
export const MAX_RELEASE_REASON_CHARS = 200;

/**
 * An agent's Release.reason as recorded in the released runs: control
 * characters replaced by spaces, at most MAX_RELEASE_REASON_CHARS, trimmed;
 * undefined when nothing is left (the store's default reason applies).
 */
export function releaseReasonFromWire(reason: string): string | undefined {
  // eslint-disable-next-line no-control-regex
  const clean = [...reason.replace(/[\u0000-\u001f\u007f-\u009f]/g, ' ')].slice(0, MAX_RELEASE_REASON_CHARS).join('').trim();
  return clean === '' ? undefined : clean;
}

export type CompletionWithoutHolder = Omit<CompletionReport, 'owner' | 'tokenId'>;

export type WireOutcome =
  | { kind: 'ok'; report: CompletionWithoutHolder }
  | { kind: 'malformed'; jobId: string; leaseGeneration: bigint };

const RESULT_TO_OUTCOME: Record<HandlerResult, CompletionReport['outcome'] | undefined> = {
  [HandlerResult.UNSPECIFIED]: undefined,
  [HandlerResult.SUCCEEDED]: 'SUCCEEDED',
  [HandlerResult.FAILED]: 'FAILED',
  [HandlerResult.TIMED_OUT]: 'TIMED_OUT',
  [HandlerResult.CANCELLED]: 'CANCELLED',
};

export function outcomeFromWire(outcome: LeaseOutcome): WireOutcome {
  const lease = leaseFromWire(outcome);
  if (lease.kind === 'malformed') return lease;
  // Built field by field (not spread from lease.ref): one per finished run, on the coordinator's busiest path.
  const { jobId, leaseGeneration } = lease.ref;
  return {
    kind: 'ok',
    report: {
      jobId,
      leaseGeneration,
      // An unspecified (or unknown) result is treated as a failure: the agent did not say it succeeded.
      outcome: RESULT_TO_OUTCOME[outcome.result] ?? 'FAILED',
      error: outcome.error === '' ? null : outcome.error,
    },
  };
}

export function toWireLease(lease: LeaseRef): Pick<WireLeaseRef, 'jobId' | 'leaseGeneration'> {
  return { jobId: lease.jobId, leaseGeneration: BigInt(lease.leaseGeneration) };
}

/**
 * `traceparent`: the claim span's context (or the job's, passed through), empty when none. A complete
 * message (`$typeName` and every field), like the renew statuses below.
 */
export function toAssignment(job: ClaimedJob, anchorSeq: bigint, traceparent: string | null = job.traceParent): Assignment {
  return {
    $typeName: 'kairos.v1.Assignment',
    jobId: job.jobId,
    runId: String(job.runId),
    task: job.task,
    payloadJson: job.payloadJson,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    leaseGeneration: BigInt(job.leaseGeneration),
    leaseRemainingMs: job.leaseRemainingMs,
    timeoutMs: job.timeoutMs ?? 0,
    scheduledFor: timestampMessage(job.scheduledForMs),
    anchorSeq,
    traceparent: traceparent ?? '',
    // Pre-dispatched (claimed ahead of its due instant): the agent starts it then.
    startAtMs: job.dueAtMs > job.claimedAtMs ? job.dueAtMs : 0,
  };
}

/**
 * Renew statuses are built as complete LeaseStatus messages (`$typeName` and
 * every field): protobuf-es's `create` then takes them as they are instead of
 * building each one field by field, which matters for a RenewReply listing
 * thousands of leases.
 */
function leaseStatus(jobId: string, leaseGeneration: bigint, state: LeaseStatus['state'], abortRequested = false): LeaseStatus {
  return { $typeName: 'kairos.v1.LeaseStatus', jobId, leaseGeneration, state, abortRequested };
}

function lost(reason: LeaseLostReason): LeaseStatus['state'] {
  return { case: 'lost', value: { $typeName: 'kairos.v1.LeaseLost', reason } };
}

export function renewStatus(result: RenewResult): LeaseStatus {
  const generation = BigInt(result.leaseGeneration);
  if (result.kind === 'renewed' && result.remainingMs > 0) {
    return leaseStatus(result.jobId, generation, { case: 'remainingMs', value: Math.min(result.remainingMs, 0xffffffff) }, result.abortRequested);
  }
  const reason =
    result.kind === 'renewed'
      ? LeaseLostReason.EXPIRED
      : result.reason === 'stale-generation'
        ? LeaseLostReason.STALE_GENERATION
        : result.reason === 'expired'
          ? LeaseLostReason.EXPIRED
          : // not-found, and not-owner: another agent's lease is none of this one's business.
            LeaseLostReason.NOT_FOUND;
  return leaseStatus(result.jobId, generation, lost(reason));
}

/** The answer to a lease refused at the edge: lost, as if it did not exist. */
export function malformedRenewStatus(lease: { jobId: string; leaseGeneration: bigint }): LeaseStatus {
  return leaseStatus(lease.jobId, lease.leaseGeneration, lost(LeaseLostReason.NOT_FOUND));
}

export function outcomeAck(result: CompleteResult): OutcomeAck {
  return {
    $typeName: 'kairos.v1.OutcomeAck',
    jobId: result.jobId,
    leaseGeneration: BigInt(result.leaseGeneration),
    result: result.kind === 'recorded' ? OutcomeAckResult.RECORDED : OutcomeAckResult.STALE,
  };
}

export function malformedOutcomeAck(outcome: { jobId: string; leaseGeneration: bigint }): OutcomeAck {
  return { $typeName: 'kairos.v1.OutcomeAck', jobId: outcome.jobId, leaseGeneration: outcome.leaseGeneration, result: OutcomeAckResult.STALE };
}
