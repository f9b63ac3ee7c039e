/**
 * Executor: runs task handlers on the handler (main) thread and decides how
 * each run ended.
 *
 * Every run ends in exactly one result of the closed union `RunResult`
 * (succeeded | failed | timed-out | cancelled | lease-lost), decided by
 * `classifyRun` and nowhere else. The decision is taken at the FIRST of:
 *
 *   - the handler's promise settling, or
 *   - an abort: its timeout_ms passing, the session reporting the lease lost,
 *     the drain grace running out, or the agent closing.
 *
 * On an abort the result is fixed at that moment and the handler's signal is
 * aborted with a TaskAbortedError; the executor does not wait for the handler.
 *
 * An operator's abort (`stop`) is the exception: it aborts the signal but
 * decides only when the handler settles (an `exec` child has exited), or when
 * `graceMs` runs out, whichever is first. The agent keeps the lease meanwhile,
 * so the job cannot start elsewhere while the handler is still stopping. A
 * handler that settles with an error after the abort is CANCELLED; one that
 * resolves had finished its work and is SUCCEEDED.
 * A handler that ignores its signal keeps running in the background: its
 * slot is freed (the coordinator is told the run ended, so it may run the job
 * again), its eventual value or error is discarded and logged as "settled
 * after its result was decided". This is the at-least-once behaviour the
 * README asks handler authors to be ready for, and the reason they must
 * honour the signal.
 *
 * A handler that blocks the thread (CPU work without awaiting) delays every
 * timer on this thread, including its own timeout. When its promise then
 * settles past the deadline, the run is still classified as timed-out: the
 * timeout is a limit on run time, not on how promptly the timer fired.
 * Renewals are unaffected: they run on the session thread.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { TaskAbortedError, type TaskContext, type TaskHandler } from '../sdk';
import { leaseId, type LeaseOffer, type LeaseLossReason } from './thread-messages';

/** Why the executor aborted a run. */
export type AbortCause =
  | { readonly kind: 'timeout'; readonly timeoutMs: number }
  /** An operator aborted the run; `unstopped`: the handler had not stopped within `graceMs`. */
  | { readonly kind: 'aborted'; readonly unstopped?: { readonly graceMs: number } }
  | { readonly kind: 'lease-lost'; readonly reason: LeaseLossReason }
  | { readonly kind: 'drain-grace'; readonly graceMs: number }
  | { readonly kind: 'closed' };

/** How the executor learnt that a run is over. */
export type RunEnd =
  | { readonly kind: 'resolved' }
  | { readonly kind: 'rejected'; readonly error: unknown }
  | { readonly kind: 'aborted'; readonly cause: AbortCause };

/** How a run ended: the agent's closed result union. */
export type RunResult =
  | { readonly kind: 'succeeded' }
  | { readonly kind: 'failed'; readonly error: string }
  | { readonly kind: 'timed-out'; readonly error: string }
  | { readonly kind: 'cancelled'; readonly error: string }
  | { readonly kind: 'lease-lost'; readonly reason: LeaseLossReason };

export type RunResultKind = RunResult['kind'];

/** Longest error text reported to the coordinator: what it stores (libs/store MAX_ERROR_CHARS). */
export const MAX_ERROR_CHARS = 4_096;

/**
 * The one place a run's result is decided. `overrun` is set when the handler
 * settled after its timeout had already passed (its timer could not fire
 * because the thread was busy).
 */
export function classifyRun(end: RunEnd, overrun?: { readonly timeoutMs: number; readonly elapsedMs: number }): RunResult {
  switch (end.kind) {
    case 'aborted':
      switch (end.cause.kind) {
        case 'timeout':
          return { kind: 'timed-out', error: `timed out after ${end.cause.timeoutMs} ms` };
        case 'aborted':
          return {
            kind: 'cancelled',
            error: end.cause.unstopped
              ? `aborted by an operator; the handler did not stop within ${end.cause.unstopped.graceMs} ms`
              : 'aborted by an operator',
          };
        case 'lease-lost':
          return { kind: 'lease-lost', reason: end.cause.reason };
        case 'drain-grace':
          return { kind: 'cancelled', error: `cancelled: the agent's drain grace period (${end.cause.graceMs} ms) ran out` };
        case 'closed':
          return { kind: 'cancelled', error: 'cancelled: the agent was closed' };
        default:
          return assertNever(end.cause);
      }
    case 'resolved':
    case 'rejected':
      if (overrun !== undefined) {
        return {
          kind: 'timed-out',
          error: `timed out: ran ${Math.round(overrun.elapsedMs)} ms, over its ${overrun.timeoutMs} ms timeout, without yielding to the timer`,
        };
      }
      return end.kind === 'resolved' ? { kind: 'succeeded' } : { kind: 'failed', error: errorText(end.error) };
    default:
      return assertNever(end);
  }
}

/** Readable, bounded text of a thrown value (message plus causes). */
export function errorText(error: unknown): string {
  let text: string;
  if (error instanceof Error) {
    text = error.message || error.name;
    let cause: unknown = error.cause;
    for (let depth = 0; cause !== undefined && depth < 3; depth += 1) {
      text += `: ${cause instanceof Error ? cause.message : String(cause)}`;
      cause = cause instanceof Error ? cause.cause : undefined;
    }
  } else {
    text = typeof error === 'string' ? error : safeJson(error);
  }
  return text.length > MAX_ERROR_CHARS ? `${text.slice(0, MAX_ERROR_CHARS - 1)}…` : text;
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function assertNever(value: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(value)}`);
}

/** A run in progress. */
interface Run {
  readonly offer: LeaseOffer;
  readonly id: string;
  /**
   * Made on the handler's first read of `ctx.signal`: most handlers never read
   * it, and an AbortController per run showed in agent profiles at thousands
   * of runs a second. Until then an abort only records its reason, and the
   * signal is born aborted with it.
   */
  controller: AbortController | undefined;
  abortReason: TaskAbortedError | undefined;
  readonly startedAt: number;
  readonly timer: NodeJS.Timeout | undefined;
  /** Set by `stop` (an operator's abort): decides the run if the handler has not settled by then. */
  stopTimer: NodeJS.Timeout | undefined;
}

/**
 * A run's TaskContext. A class, so that a run costs one object: its signal and
 * child logger are made on first use by getters on the prototype (most
 * handlers read neither, and a per-run AbortController or child logger showed
 * in agent profiles at thousands of runs a second), where an object literal
 * with getters made two closures per run.
 */
class RunContext implements TaskContext {
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly fencingToken: bigint;
  readonly jobId: string;
  readonly runId: string;
  readonly scheduledFor: Date;
  // Declared only: an own property exists only when the run has a trace context, as before.
  declare readonly traceparent?: string;
  readonly #run: Run;
  readonly #parentLogger: Logger;
  #logger: Logger | undefined;

  constructor(run: Run, parentLogger: Logger) {
    const offer = run.offer;
    this.attempt = offer.attempt;
    this.maxAttempts = offer.maxAttempts;
    this.fencingToken = offer.generation;
    this.jobId = offer.jobId;
    this.runId = offer.runId;
    this.scheduledFor = new Date(offer.scheduledForMs ?? Date.now());
    if (offer.traceparent) this.traceparent = offer.traceparent;
    this.#run = run;
    this.#parentLogger = parentLogger;
  }

  get signal(): AbortSignal {
    return signalOf(this.#run);
  }

  get logger(): Logger {
    const offer = this.#run.offer;
    return (this.#logger ??= this.#parentLogger.child({ jobId: offer.jobId, runId: offer.runId, attempt: offer.attempt, task: offer.task }));
  }
}

/** The run's signal, made on first use (see Run.controller). */
function signalOf(run: Run): AbortSignal {
  if (run.controller === undefined) {
    run.controller = new AbortController();
    if (run.abortReason !== undefined) run.controller.abort(run.abortReason);
  }
  return run.controller.signal;
}

export interface ExecutorHooks {
  /**
   * The handler is about to be called. Called before the handler, so what it posts is queued first; the
   * batch leaves at the end of the turn (thread-batch.ts), after a handler that blocks the thread yields.
   */
  onStarted(offer: LeaseOffer): void;
  /** The run's result was decided. */
  onDecided(offer: LeaseOffer, result: RunResult, durationMs: number): void;
}

export interface ExecutorOptions {
  readonly handlers: Readonly<Record<string, TaskHandler>>;
  readonly logger: Logger;
  readonly hooks: ExecutorHooks;
}

export class Executor {
  private readonly runs = new Map<string, Run>();
  private idleWaiters: (() => void)[] = [];

  constructor(private readonly options: ExecutorOptions) {}

  /** Runs in progress (result not yet decided). */
  get running(): number {
    return this.runs.size;
  }


  /** Starts the handler of an offered lease. */
  start(offer: LeaseOffer): void {
    const id = leaseId(offer);
    if (this.runs.has(id)) return;
    const timer =
      offer.timeoutMs > 0 ? setTimeout(() => this.abort(id, { kind: 'timeout', timeoutMs: offer.timeoutMs }), offer.timeoutMs) : undefined;
    const run: Run = { offer, id, controller: undefined, abortReason: undefined, startedAt: performance.now(), timer, stopTimer: undefined };
    this.runs.set(id, run);
    const ctx = new RunContext(run, this.options.logger);
    this.options.hooks.onStarted(offer);
    const handler = this.options.handlers[offer.task];
    let promise: Promise<unknown>;
    try {
      if (handler === undefined) throw new Error(`no handler registered for task "${offer.task}"`);
      // The payload crosses the wire and the thread boundary as text; this is its one parse.
      promise = Promise.resolve(handler(parsePayloadJson(offer.payloadJson), ctx));
    } catch (error: unknown) {
      promise = Promise.reject(error);
    }
    promise.then(
      () => this.settle(run, { kind: 'resolved' }),
      (error: unknown) => this.settle(run, { kind: 'rejected', error }),
    );
  }

  /** Aborts a run and decides its result now. False if it is not running (already decided). */
  abort(id: string, cause: AbortCause): boolean {
    const run = this.runs.get(id);
    if (run === undefined) return false;
    this.decide(run, classifyRun({ kind: 'aborted', cause }));
    signalAbort(run, cause);
    return true;
  }

  /**
   * An operator aborted the run: abort its signal now, decide when the handler
   * settles or after `graceMs`. False if it is not running or already stopping.
   */
  stop(id: string, graceMs: number): boolean {
    const run = this.runs.get(id);
    if (run === undefined || run.stopTimer !== undefined) return false;
    run.stopTimer = setTimeout(() => {
      if (this.runs.get(id) !== run) return;
      this.decide(run, classifyRun({ kind: 'aborted', cause: { kind: 'aborted', unstopped: { graceMs } } }));
    }, graceMs);
    signalAbort(run, { kind: 'aborted' });
    return true;
  }

  /** Aborts every run in progress. */
  abortAll(cause: AbortCause): void {
    for (const id of [...this.runs.keys()]) this.abort(id, cause);
  }

  /** Resolves when no run is in progress. */
  whenIdle(): Promise<void> {
    if (this.runs.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private settle(run: Run, end: RunEnd): void {
    const elapsedMs = performance.now() - run.startedAt;
    if (this.runs.get(run.id) !== run) {
      // Already decided by an abort; the handler did not stop in time (or at all).
      this.options.logger.warn(
        { jobId: run.offer.jobId, runId: run.offer.runId, ended: end.kind, elapsedMs: Math.round(elapsedMs) },
        'handler settled after its result was decided; its result is discarded',
      );
      return;
    }
    if (run.stopTimer !== undefined && end.kind === 'rejected') {
      // Stopped as the operator asked (an exec child killed, a handler that honoured its signal).
      this.decide(run, classifyRun({ kind: 'aborted', cause: { kind: 'aborted' } }));
      return;
    }
    const timeoutMs = run.offer.timeoutMs;
    const overrun = timeoutMs > 0 && elapsedMs > timeoutMs ? { timeoutMs, elapsedMs } : undefined;
    this.decide(run, classifyRun(end, overrun));
  }

  private decide(run: Run, result: RunResult): void {
    this.runs.delete(run.id);
    if (run.timer !== undefined) clearTimeout(run.timer);
    if (run.stopTimer !== undefined) clearTimeout(run.stopTimer);
    this.options.hooks.onDecided(run.offer, result, performance.now() - run.startedAt);
    if (this.runs.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }
}

/** The payload object of an offer; a payload that is not a JSON object fails the run. */
function parsePayloadJson(text: string): Record<string, unknown> {
  const payload: unknown = JSON.parse(text);
  if (payload === null || typeof payload !== 'object' || Array.isArray(payload)) {
    throw new Error(`the job's payload is not a JSON object: ${text.slice(0, 100)}`);
  }
  return payload as Record<string, unknown>;
}

/** Aborts the run's signal (or records the reason for a signal not made yet). */
function signalAbort(run: Run, cause: AbortCause): void {
  const reason = new TaskAbortedError(cause.kind, abortMessage(cause));
  if (run.controller === undefined) run.abortReason = reason;
  else run.controller.abort(reason);
}

function abortMessage(cause: AbortCause): string {
  switch (cause.kind) {
    case 'timeout':
      return `the run exceeded its timeout of ${cause.timeoutMs} ms`;
    case 'aborted':
      return 'an operator aborted the run';
    case 'lease-lost':
      return `the lease was lost (${cause.reason}); another agent may run this job`;
    case 'drain-grace':
      return `the agent is shutting down and its drain grace (${cause.graceMs} ms) ran out`;
    case 'closed':
      return 'the agent was closed';
  }
}
