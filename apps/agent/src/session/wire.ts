/**
 * Pure conversions between the generated protobuf messages (agent.proto) and
 * the agent's internal shapes. Kept apart so the session reads as protocol
 * logic, and so the mapping tables (results, loss reasons) live in one place.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampMs } from '@bufbuild/protobuf/wkt';
import {
  HandlerResult,
  LeaseLostReason,
  OutcomeAckResult,
  timestampMessage,
  type AgentMessageSchema,
  type Assignment,
  type LeaseOutcome,
  type LeaseRef,
  type LeaseStatus,
  type Welcome,
} from '@kairos/proto';
import type { PendingOutcome, RenewStatus } from './lease-keeper';
import type { LeaseKey, LeaseLossReason, LeaseOffer, ReportableResult } from '../runtime/thread-messages';

/** What the agent may write on the Connect stream (full messages or init objects). */
export type AgentMessageInit = MessageInitShape<typeof AgentMessageSchema>;

/** Welcome, with the fallbacks applied. */
export interface WelcomeInfo {
  readonly coordinatorId: string;
  readonly leaseMs: number;
  readonly heartbeatIntervalMs: number;
}

/** Used when a (misbehaving) coordinator sends lease_ms = 0; DESIGN's default lease. */
const FALLBACK_LEASE_MS = 10_000;

/** Reads Welcome; a zero heartbeat interval falls back to lease/3 as DESIGN prescribes. */
export function welcomeInfo(welcome: Welcome): WelcomeInfo {
  const leaseMs = welcome.leaseMs > 0 ? welcome.leaseMs : FALLBACK_LEASE_MS;
  const heartbeatIntervalMs = welcome.heartbeatIntervalMs > 0 ? welcome.heartbeatIntervalMs : Math.max(1, Math.floor(leaseMs / 3));
  return { coordinatorId: welcome.coordinatorId, leaseMs, heartbeatIntervalMs };
}

export function leaseKeyOf(message: { jobId: string; leaseGeneration: bigint }): LeaseKey {
  return { jobId: message.jobId, generation: message.leaseGeneration };
}

/**
 * A complete LeaseRef message (with its `$typeName`): protobuf-es's `create`
 * takes it as is instead of building one field by field, which matters for a
 * heartbeat listing thousands of leases.
 */
export function leaseRefOf(key: LeaseKey): LeaseRef {
  return { $typeName: 'kairos.v1.LeaseRef', jobId: key.jobId, leaseGeneration: key.generation };
}

/** An Assignment as the handler thread sees it. A missing (empty) payload is an empty object. */
export function offerOf(assignment: Assignment): LeaseOffer {
  return {
    jobId: assignment.jobId,
    generation: assignment.leaseGeneration,
    runId: assignment.runId,
    task: assignment.task,
    payloadJson: assignment.payloadJson === '' ? '{}' : assignment.payloadJson,
    attempt: assignment.attempt,
    maxAttempts: assignment.maxAttempts,
    timeoutMs: assignment.timeoutMs,
    scheduledForMs: assignment.scheduledFor === undefined ? null : timestampMs(assignment.scheduledFor),
    traceparent: assignment.traceparent === '' ? null : assignment.traceparent,
  };
}

/** The contract's loss reasons, in the agent's vocabulary. */
export function lossReasonOf(reason: LeaseLostReason): LeaseLossReason {
  switch (reason) {
    case LeaseLostReason.STALE_GENERATION:
      return 'stale-generation';
    case LeaseLostReason.EXPIRED:
      return 'expired';
    case LeaseLostReason.CANCELLED:
      return 'cancelled';
    case LeaseLostReason.NOT_FOUND:
      return 'not-found';
    case LeaseLostReason.UNSPECIFIED:
      return 'unspecified';
    default:
      // A reason added to the contract after this agent was built.
      return 'unspecified';
  }
}

/** One LeaseStatus as a keeper status; undefined when its oneof is unset (a malformed reply). */
export function renewStatusOf(status: LeaseStatus): RenewStatus | undefined {
  switch (status.state.case) {
    case 'remainingMs':
      return status.abortRequested
        ? { kind: 'held', remainingMs: status.state.value, abortRequested: true }
        : { kind: 'held', remainingMs: status.state.value };
    case 'lost':
      return { kind: 'lost', reason: lossReasonOf(status.state.value.reason) };
    case undefined:
      return undefined;
  }
}

/** The ack's verdict; an unset result (never sent by a correct coordinator) counts as recorded. */
export function ackResultOf(result: OutcomeAckResult): 'RECORDED' | 'STALE' {
  return result === OutcomeAckResult.STALE ? 'STALE' : 'RECORDED';
}

/** Reportable result -> HandlerResult: the one mapping table for outcomes. */
export function handlerResultOf(result: ReportableResult): HandlerResult {
  switch (result) {
    case 'succeeded':
      return HandlerResult.SUCCEEDED;
    case 'failed':
      return HandlerResult.FAILED;
    case 'timed-out':
      return HandlerResult.TIMED_OUT;
    case 'cancelled':
      return HandlerResult.CANCELLED;
  }
}

/** A complete LeaseOutcome message (see `leaseRefOf`, and complete.ts in @kairos/proto). */
export function leaseOutcomeOf(key: LeaseKey, outcome: PendingOutcome): LeaseOutcome {
  return {
    $typeName: 'kairos.v1.LeaseOutcome',
    jobId: key.jobId,
    leaseGeneration: key.generation,
    result: handlerResultOf(outcome.result),
    error: outcome.error,
    finishedAt: timestampMessage(outcome.finishedAtMs),
    traceparent: outcome.traceparent ?? '',
  };
}
