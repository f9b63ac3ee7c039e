/**
 * The messages exchanged between the two halves of an agent:
 *
 * - the SESSION thread (a worker thread in production) owns the gRPC stream
 *   and every lease decision: which leases are held, how long each can be
 *   trusted, what is renewed, released and reported;
 * - the HANDLER thread (the process's main thread) runs task handlers and
 *   decides how each run ended.
 *
 * Everything here must survive structured cloning (`postMessage`): plain
 * objects, strings, numbers, bigints, no functions, no class instances. Times
 * that cross the boundary are wall-clock milliseconds (`...AtMs`), except a
 * staged offer's instants (`StagedStart`), readings of `sharedMonotonicMs`: each thread's
 * `performance.now()` has its own origin, so those never cross.
 */

/**
 * Milliseconds on the one monotonic clock every thread of the process reads
 * alike (process.hrtime). The only monotonic reading that crosses between the
 * threads: a staged offer's start (decision 0030).
 */
export function sharedMonotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/**
 * A pre-dispatched lease whose start is at most this far ahead is handed to
 * the handler thread before its instant (staged, decision 0030), which starts
 * it then: a spike's offers are packed, posted and unpacked before it is due,
 * and it drains on the handler thread without a round trip to the session
 * thread. A withdrawal (a cancel, pause or edit) of a staged lease is answered
 * by the handler thread, which gives it back if it has not started it.
 */
export const STAGE_AHEAD_MS = 250;

/**
 * A pre-dispatched lease whose start has come waits for a free slot of the
 * handler thread (the start queue: the session thread's, then the handler
 * thread's own short one) while slots keep freeing: it is given back, so that
 * another agent runs it instead of this busy one, once no slot has freed for
 * START_GRACE_MS since its start (on the handler thread: since it arrived
 * there, or, staged, since its start), and in any case START_WAIT_MAX_MS after
 * it. A spike of short jobs
 * drains through the queue; a queue behind long runs is handed back within
 * half a second.
 */
export const START_GRACE_MS = 500;
export const START_WAIT_MAX_MS = 5_000;

/**
 * When a lease that began waiting for a slot at `since` is given back, unless
 * a slot frees first: `graceMs` after `since` or the last slot freed, and
 * never later than START_WAIT_MAX_MS (or the grace, if longer) after `since`.
 * The rule of both start queues.
 */
export function startGiveBackAt(since: number, lastSlotFreedAt: number, graceMs: number): number {
  return Math.min(since + Math.max(START_WAIT_MAX_MS, graceMs), Math.max(since, lastSlotFreedAt) + graceMs);
}

/** When a staged offer may start, on the clock both threads share (sharedMonotonicMs). */
export interface StagedStart {
  /** Not before this instant. */
  readonly startAt: number;
  /**
   * Not after this one: the end of the lease's trust window when it was staged. A start the handler
   * thread reaches later (the process was stopped, say) may be under a lease the coordinator has
   * already expired and given to another run; the offer is given back instead.
   */
  readonly trustUntil: number;
}

/** The Release reason of a staged offer whose trust window ended before it could start. */
export const STAGED_TRUST_ENDED = 'its trust window ended before it could start (the agent was held up)';

/** The Release reason of a pre-dispatched lease given back unstarted because the coordinator asked for it (Withdraw). */
export const WITHDRAWN_BEFORE_START = 'withdrawn before its start (the job was cancelled, paused or edited)';

/** The Release reason of a lease given back by `startGiveBackAt`. */
export function startQueueStalled(graceMs: number): string {
  return `no free slot: the start queue did not move for ${graceMs} ms`;
}

/** One lease: a job and the generation it was claimed at (the fencing token). */
export interface LeaseKey {
  readonly jobId: string;
  readonly generation: bigint;
}

/** An assignment handed from the session to the handler thread. */
export interface LeaseOffer extends LeaseKey {
  readonly runId: string;
  readonly task: string;
  /** The payload as JSON text (an object); parsed on the handler thread, once, for the handler. */
  readonly payloadJson: string;
  readonly attempt: number;
  readonly maxAttempts: number;
  /** 0 = no timeout. */
  readonly timeoutMs: number;
  /** The occurrence this run serves, wall clock; null when the coordinator left it unset. */
  readonly scheduledForMs: number | null;
  /** W3C trace context of the run's claim (null: none); the run span's, once the handler thread starts it. */
  readonly traceparent?: string | null;
}

/** Handler results that are reported to the coordinator (a lost lease is never reported). */
export type ReportableResult = 'succeeded' | 'failed' | 'timed-out' | 'cancelled';

/** Why the session stopped trusting a lease. */
export type LeaseLossReason =
  | 'stale-generation' // the job was claimed again at a newer generation
  | 'expired' // the lease ran out before it was renewed (or was renewed with 0 ms left)
  | 'cancelled' // an operator cancelled the job
  | 'not-found' // the job no longer exists
  | 'unspecified' // the coordinator gave no reason
  | 'trust-window' // no renewal arrived in time: the agent fenced itself
  | 'superseded' // the coordinator assigned the same job at a newer generation
  | 'session-failed'; // the session thread died, so nothing renews the lease any more

/** Where a loss was learnt. */
export type LeaseLossSource = 'renew-reply' | 'revoke' | 'trust-window' | 'assignment' | 'session';

/** Handler thread -> session thread. */
export type ToSession =
  /** The handler of an offered lease has been called. */
  | { readonly type: 'started'; readonly lease: LeaseKey }
  /** A run ended with a reportable result; the session reports it until acknowledged. */
  | {
      readonly type: 'outcome';
      readonly lease: LeaseKey;
      readonly result: ReportableResult;
      readonly error: string;
      readonly finishedAtMs: number;
      /** The run's trace context, sent with the outcome (null: none). */
      readonly traceparent?: string | null;
    }
  /** An offered lease will never be started (draining, no free slot, withdrawn): give it back. */
  | { readonly type: 'release'; readonly lease: LeaseKey; readonly reason: string }
  /** A `withdraw` of a lease this thread has started (or no longer has): it keeps it. */
  | { readonly type: 'withdraw-refused'; readonly lease: LeaseKey }
  /** The agent is draining: tell the coordinator, take no new work. */
  | { readonly type: 'drain' }
  /** Draining: every handler has ended and its outcome was posted; flush and close. */
  | { readonly type: 'work-done' }
  /** Abrupt stop: cancel the stream, report nothing. */
  | { readonly type: 'close' };

/** Events the session raises; the handler thread re-emits them on `RunningAgent.events`. */
export type SessionEvent =
  | {
      readonly name: 'connected';
      readonly coordinatorId: string;
      readonly leaseMs: number;
      readonly heartbeatIntervalMs: number;
    }
  | { readonly name: 'disconnected'; readonly reason: string }
  | {
      readonly name: 'outcome-acked';
      readonly jobId: string;
      readonly generation: bigint;
      readonly result: 'RECORDED' | 'STALE';
    }
  | { readonly name: 'released'; readonly jobId: string; readonly generation: bigint; readonly reason: string };

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** Session thread -> handler thread. */
export type ToExecutor =
  /** A new lease to run. */
  /** `staged`: handed over ahead of its start (STAGE_AHEAD_MS); absent: start now. */
  | { readonly type: 'offer'; readonly lease: LeaseOffer; readonly staged?: StagedStart }
  /** A held lease is gone: abort its handler (if any) and report nothing. */
  | {
      readonly type: 'lost';
      readonly lease: LeaseKey;
      readonly reason: LeaseLossReason;
      readonly source: LeaseLossSource;
    }
  /**
   * The coordinator asks for an offered lease back (a cancel, pause or edit of
   * a pre-dispatched job): one that has not started (staged, or queued for a
   * slot) is dropped and answered `release` (WITHDRAWN_BEFORE_START), any
   * other `withdraw-refused`.
   */
  | { readonly type: 'withdraw'; readonly lease: LeaseKey }
  /**
   * Renewals moved the trust windows of offered leases (sharedMonotonicMs): a staged one among them may
   * now start until `until` (StagedStart.trustUntil).
   */
  | { readonly type: 'trust'; readonly leases: readonly { readonly lease: LeaseKey; readonly until: number }[] }
  /**
   * An operator aborted the run: signal its handler, keep the lease, and post
   * the outcome once the handler has stopped (bounded by the abort grace).
   */
  | { readonly type: 'abort'; readonly lease: LeaseKey; readonly source: LeaseLossSource }
  | { readonly type: 'event'; readonly event: SessionEvent }
  /** A log line from the session thread, written by the agent's logger. */
  | {
      readonly type: 'log';
      readonly level: LogLevel;
      readonly fields: Record<string, unknown>;
      readonly msg: string;
    }
  /** Draining finished: the stream is closed; `unacked` outcomes were never acknowledged. */
  | { readonly type: 'drained'; readonly unacked: number }
  /** The session stopped after a `close` request. */
  | { readonly type: 'closed' };

/** Stable string id of a lease, for maps and logs. */
export function leaseId(lease: LeaseKey): string {
  return `${lease.jobId}@${lease.generation}`;
}
