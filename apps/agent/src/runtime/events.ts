/**
 * Events a running agent emits, for operators' tooling and for tests that
 * wait on what happened instead of sleeping. All are emitted on the main
 * (handler) thread; the session thread's events arrive by message.
 */
import { EventEmitter } from 'node:events';
import type { RunResultKind } from './executor';
import type { LeaseLossReason, LeaseLossSource } from './thread-messages';

export interface LeaseInfo {
  readonly jobId: string;
  /** The lease generation (fencing token). */
  readonly generation: bigint;
}

export interface RunInfo extends LeaseInfo {
  readonly runId: string;
  readonly task: string;
}

export type AgentEventMap = {
  /** A stream was welcomed by a coordinator. */
  connected: [info: { coordinatorId: string; leaseMs: number; heartbeatIntervalMs: number }];
  /** The welcomed stream broke; the agent is reconnecting. */
  disconnected: [info: { reason: string }];
  /** An assignment reached the handler thread. */
  assigned: [info: RunInfo];
  /** Its handler was called. */
  started: [info: RunInfo];
  /** Its result was decided (`lease-lost` runs are not reported to the coordinator). */
  finished: [info: RunInfo & { result: RunResultKind; error?: string; durationMs: number }];
  /** An operator aborted a held lease's run; its handler was signalled and its outcome will be reported. */
  'abort-requested': [info: LeaseInfo & { source: LeaseLossSource }];
  /** A held lease is gone; its handler (if running) was aborted. */
  'lease-lost': [info: LeaseInfo & { reason: LeaseLossReason; source: LeaseLossSource }];
  /** The coordinator acknowledged an outcome. */
  'outcome-acked': [info: LeaseInfo & { result: 'RECORDED' | 'STALE' }];
  /** A lease was given back unstarted. */
  released: [info: LeaseInfo & { reason: string }];
  /** drain() finished: the stream is closed. */
  drained: [info: { unackedOutcomes: number }];
  /** The session thread died; every handler was aborted (no lease can be trusted). */
  failed: [info: { error: Error }];
};

export type AgentEventName = keyof AgentEventMap;

/** A typed node:events emitter. */
export type AgentEvents = EventEmitter<AgentEventMap>;

export function createAgentEvents(): AgentEvents {
  return new EventEmitter<AgentEventMap>();
}
