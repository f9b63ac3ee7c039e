/**
 * A running agent, main-thread side: wires the executor (handlers run here)
 * to the session thread (stream, heartbeats, trust windows), re-emits what
 * happens as AgentEvents, and implements drain and close.
 *
 * Who decides what
 *   - The session thread decides which leases are held and when one is lost;
 *     this side only obeys (`offer` -> start, `lost` -> abort).
 *   - This side decides whether an offered lease is started or released
 *     (only it knows whether the handler was called), and how a run ended.
 *     An offer that finds every slot busy waits in a short queue here
 *     (handler-queue.ts) and starts when a run ends, in that turn; one that
 *     waits too long is released unstarted. A pre-dispatched offer staged
 *     ahead of its start (decision 0030) waits here until it, timed by this
 *     thread, and then like a queued one.
 *
 * Lifecycle (tagged union `Lifecycle`)
 *   running ──drain()──> draining ──session drained──> stopped
 *      │                    │
 *      └──close()───────────┴──> closing ──> stopped
 *   Session thread failure from any state -> stopped (all handlers aborted).
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { pino, type Logger } from 'pino';
import { tracingFromEnv, type JobSpan, type Tracing } from '@kairos/tracing';
import { AGENT_VERSION, ConfigError, checkAgentOptions, defaultPreDispatchQueue, registeredHandlers, type AgentOptions } from '../config';
import type { DefinedTask } from '../sdk';
import { createAgentEvents, type AgentEvents, type RunInfo } from './events';
import { Executor, type RunResult } from './executor';
import { HandlerQueue, handlerQueueLimit } from './handler-queue';
import type { SessionConfig } from '../session/session';
import { startSessionInline, startSessionWorker, type SessionChannel, type SessionListeners } from '../session/session-thread';
import {
  leaseId,
  sharedMonotonicMs,
  START_GRACE_MS,
  startQueueStalled,
  type LeaseKey,
  type LeaseOffer,
  type SessionEvent,
  type StagedStart,
  type ToExecutor,
  STAGED_TRUST_ENDED,
  WITHDRAWN_BEFORE_START,
} from './thread-messages';

export interface RunningAgent {
  readonly agentId: string;
  readonly events: AgentEvents;
  /**
   * SIGTERM behaviour: send Draining, release what has not started, let
   * running handlers finish within drainGraceMs, then cancel the rest (reported
   * CANCELLED), flush outcomes until acknowledged (bounded), close the stream.
   */
  drain(): Promise<void>;
  /** Abrupt stop: abort every handler, report nothing, cancel the stream. Leases expire on their own. */
  close(): Promise<void>;
}

/** Knobs for tests and embedding; not part of the public options. */
export interface AgentInternals {
  /** 'worker' (default): the session runs in a worker thread. 'inline': same thread, for tests. */
  readonly thread?: 'worker' | 'inline';
  /** Compiled session-worker.js to load (default: resolved beside this file or in dist/). */
  readonly workerScript?: string;
  /** While draining, how long to wait for the last OutcomeAcks (default 10 s). */
  readonly flushTimeoutMs?: number;
  /** How long the start queue may stand still before its leases are given back (default START_GRACE_MS; tests). */
  readonly startGraceMs?: number;
  /** Replaces the session thread altogether (unit tests of this file script it). */
  readonly connect?: (config: SessionConfig, listeners: SessionListeners) => SessionChannel;
}

const DEFAULT_FLUSH_TIMEOUT_MS = 10_000;
/** How long an aborted handler has to stop before its run is reported CANCELLED anyway (KAIROS_ABORT_GRACE_MS). */
const DEFAULT_ABORT_GRACE_MS = 10_000;
/** Extra time the main thread gives the session thread beyond its own flush deadline. */
const SESSION_STOP_SLACK_MS = 3_000;
/**
 * A millisecond timer fires up to a millisecond or two late: the staged starts' timer is armed this much
 * before the instant and the rest is waited one event-loop turn at a time (setImmediate: handlers and I/O
 * still run), as the session thread does for its own starts.
 */
const STAGE_SPIN_MS = 2;

/**
 * Starts an agent. Resolves once the first connection attempt is under way;
 * the coordinator need not be up (the agent keeps retrying).
 */
export function startAgent(options: AgentOptions): Promise<RunningAgent> {
  return startAgentWith(options);
}

export async function startAgentWith(options: AgentOptions, internals: AgentInternals = {}): Promise<RunningAgent> {
  const checked = checkAgentOptions(options);
  const logger = (checked.logger ?? pino({ name: 'kairos-agent' })).child({ agentId: checked.agentId });
  const flushTimeoutMs = internals.flushTimeoutMs ?? DEFAULT_FLUSH_TIMEOUT_MS;
  const config: SessionConfig = {
    coordinator: checked.coordinator,
    agentId: checked.agentId,
    tasks: checked.tasks,
    capacity: checked.capacity,
    preDispatchQueue: checked.preDispatchQueue ?? defaultPreDispatchQueue(checked.capacity),
    token: checked.token,
    tls: readTls(checked.tls),
    trustMarginMs: checked.trustMarginMs,
    version: AGENT_VERSION,
    payloadSchemas: declaredSchemas(checked),
    flushTimeoutMs,
    ...(internals.startGraceMs === undefined ? {} : { startGraceMs: internals.startGraceMs }),
  };
  const tracing = checked.tracing ?? tracingFromEnv('kairos-agent', AGENT_VERSION);
  if (tracing.enabled) logger.info('tracing on: run spans go to the exporter the OTEL_ environment names');
  const runtime = new AgentRuntime(checked, logger, flushTimeoutMs, tracing, internals.startGraceMs ?? START_GRACE_MS);
  const channel =
    internals.connect !== undefined
      ? internals.connect(config, runtime)
      : internals.thread === 'inline'
        ? startSessionInline(config, runtime)
        : startSessionWorker(config, runtime, internals.workerScript);
  runtime.attach(channel);
  logger.info(
    { coordinator: checked.coordinator, tasks: checked.tasks, capacity: checked.capacity, preDispatchQueue: config.preDispatchQueue, thread: internals.thread ?? 'worker' },
    'agent started',
  );
  return runtime;
}

type Lifecycle =
  | { readonly kind: 'running' }
  | { readonly kind: 'draining'; readonly done: Promise<void> }
  | { readonly kind: 'closing'; readonly done: Promise<void> }
  | { readonly kind: 'stopped' };

class AgentRuntime implements RunningAgent, SessionListeners {
  readonly events: AgentEvents = createAgentEvents();
  readonly agentId: string;
  private lifecycle: Lifecycle = { kind: 'running' };
  private readonly executor: Executor;
  private channel: SessionChannel | undefined;
  /** False once closed or failed: decided results are no longer sent anywhere. */
  private reporting = true;
  private drainedWaiter: ((unacked: number) => void) | undefined;
  private closedWaiter: (() => void) | undefined;

  /** Run spans by lease id, from the offer to the decided result (tracing on only). */
  private readonly runSpans = new Map<string, JobSpan>();
  /** Offers waiting for a slot of this thread (handler-queue.ts), and the timer that gives back those that wait too long. */
  private readonly queue: HandlerQueue;
  private queueTimer: NodeJS.Timeout | undefined;
  /** The timer for the earliest staged start (see `armStageTimer`), the start it is for, and its arming. */
  private stageTimer: NodeJS.Timeout | undefined;
  private stageTimerAt = Number.POSITIVE_INFINITY;
  private stageArming = 0;
  /**
   * performance.now() minus sharedMonotonicMs() on this thread: constant (both are the same monotonic
   * clock), read once, so that offers staged for one instant keep one instant here, in arrival order.
   */
  private readonly sharedToLocal = performance.now() - sharedMonotonicMs();

  constructor(
    private readonly options: AgentOptions,
    private readonly logger: Logger,
    private readonly flushTimeoutMs: number,
    private readonly tracing: Tracing,
    private readonly startGraceMs: number,
  ) {
    this.agentId = options.agentId;
    this.queue = new HandlerQueue(
      handlerQueueLimit(options.capacity),
      startGraceMs,
      options.capacity + (options.preDispatchQueue ?? defaultPreDispatchQueue(options.capacity)),
    );
    this.executor = new Executor({
      handlers: registeredHandlers(options),
      logger,
      hooks: {
        onStarted: (offer) => {
          this.post({ type: 'started', lease: keyOf(offer) });
          // Per-run events cost an object each even with no listener: built only when someone listens.
          if (this.events.listenerCount('started') > 0) this.events.emit('started', runInfo(offer));
        },
        onDecided: (offer, result, durationMs) => {
          this.onDecided(offer, result, durationMs);
          this.slotFreed();
        },
      },
    });
  }

  attach(channel: SessionChannel): void {
    this.channel = channel;
  }

  // --- messages from the session thread ---------------------------------------

  onMessage(message: ToExecutor): void {
    switch (message.type) {
      case 'offer':
        this.onOffer(message.lease, message.staged);
        return;
      case 'abort': {
        const id = leaseId(message.lease);
        this.events.emit('abort-requested', { ...message.lease, source: message.source });
        if (this.executor.stop(id, this.options.abortGraceMs ?? DEFAULT_ABORT_GRACE_MS)) return;
        // Still waiting for a slot here: it never starts, and the run ends cancelled at once.
        const queued = this.queue.remove(id);
        if (queued !== undefined) this.onDecided(queued, { kind: 'cancelled', error: 'aborted by an operator before it started' }, 0);
        return;
      }
      case 'withdraw': {
        // Not started (staged, or queued for a slot): given back, and it never starts. Started: kept.
        const offer = this.queue.remove(leaseId(message.lease));
        if (offer === undefined) this.post({ type: 'withdraw-refused', lease: message.lease });
        else this.post({ type: 'release', lease: keyOf(offer), reason: WITHDRAWN_BEFORE_START });
        return;
      }
      case 'trust':
        for (const { lease, until } of message.leases) this.queue.trust(leaseId(lease), until + this.sharedToLocal);
        return;
      case 'lost': {
        const id = leaseId(message.lease);
        // A queued offer is dropped unstarted; like a run aborted for a lost lease, nothing is reported.
        if (!this.executor.abort(id, { kind: 'lease-lost', reason: message.reason })) this.queue.remove(id);
        this.events.emit('lease-lost', { ...message.lease, reason: message.reason, source: message.source });
        return;
      }
      case 'event':
        this.emitSessionEvent(message.event);
        return;
      case 'log':
        this.logger[message.level](message.fields, message.msg);
        return;
      case 'drained':
        this.drainedWaiter?.(message.unacked);
        return;
      case 'closed':
        this.closedWaiter?.();
        return;
    }
  }

  onFailure(error: Error): void {
    if (this.lifecycle.kind === 'stopped') return;
    this.logger.error({ err: error }, 'session thread failed: aborting every run, since no lease can be renewed');
    this.reporting = false;
    this.lifecycle = { kind: 'stopped' };
    this.dropQueue();
    this.executor.abortAll({ kind: 'lease-lost', reason: 'session-failed' });
    this.drainedWaiter?.(-1);
    this.closedWaiter?.();
    this.events.emit('failed', { error });
  }

  private onOffer(offer: LeaseOffer, staged: StagedStart | undefined): void {
    if (this.events.listenerCount('assigned') > 0) this.events.emit('assigned', runInfo(offer));
    if (this.lifecycle.kind !== 'running') {
      this.post({ type: 'release', lease: keyOf(offer), reason: 'agent is draining' });
      return;
    }
    const now = performance.now();
    // Its instants on this thread's clock (they crossed on the clock both threads share).
    const toLocal = this.sharedToLocal;
    if (staged !== undefined && staged.startAt + toLocal > now) {
      // Staged ahead of its start (decision 0030): started by the stage timer, or by a slot freeing after it.
      if (this.queue.stage(leaseId(offer), offer, staged.startAt + toLocal, staged.trustUntil + toLocal)) {
        this.armStageTimer();
        return;
      }
      this.post({ type: 'release', lease: keyOf(offer), reason: 'no room to stage it' });
      return;
    }
    if (this.executor.running < this.options.capacity && !this.queue.anyWaiting(now)) {
      this.run(offer);
      return;
    }
    if (this.queue.add(leaseId(offer), offer, now)) {
      this.armQueueTimer();
      return;
    }
    // The session keeps its offers within capacity and this queue, so this is a second line of defence.
    this.post({ type: 'release', lease: keyOf(offer), reason: 'no free slot' });
  }

  private run(offer: LeaseOffer): void {
    this.executor.start(this.tracing.enabled ? this.withRunSpan(offer) : offer);
  }

  /** A run's result was decided: its slot starts the next queued offer, in this turn. */
  private slotFreed(): void {
    // Once per decided run: nothing waiting (the usual case) costs no clock reading.
    if (this.queue.empty) return;
    const now = performance.now();
    if (!this.queue.anyWaiting(now)) return;
    this.queue.slotFreed(now);
    this.startWaiting(now);
  }

  /**
   * Starts offers whose start has come, as many as slots are free: the queue's first arrivals, then staged
   * ones by start. Those the queue found past their trust window are given back, never started.
   */
  private startWaiting(now: number): void {
    while (this.lifecycle.kind === 'running' && this.executor.running < this.options.capacity) {
      const next = this.queue.shift(now);
      if (next === undefined) break;
      this.run(next);
    }
    for (const offer of this.queue.takeUntrusted()) this.post({ type: 'release', lease: keyOf(offer), reason: STAGED_TRUST_ENDED });
  }

  /** One timer, for the first queued offer's deadline; on firing it gives back the overdue ones and re-arms. */
  private armQueueTimer(): void {
    if (this.queueTimer !== undefined) return;
    const deadline = this.queue.nextDeadline();
    if (deadline === undefined) return;
    this.queueTimer = setTimeout(
      () => {
        this.queueTimer = undefined;
        const reason = startQueueStalled(this.startGraceMs);
        for (const offer of this.queue.overdue(performance.now())) this.post({ type: 'release', lease: keyOf(offer), reason });
        this.armQueueTimer();
      },
      Math.max(0, Math.ceil(deadline - performance.now())),
    );
  }

  /**
   * One timer, for the earliest staged start still ahead: armed STAGE_SPIN_MS before it, then turn by turn until the
   * clock reads it; re-armed when an earlier one is staged.
   */
  private armStageTimer(now = performance.now()): void {
    const at = this.queue.nextStagedAfter(now);
    if (at === undefined || this.stageTimerAt <= at) return;
    this.stopStageTimer();
    this.stageTimerAt = at;
    const arming = this.stageArming;
    this.stageTimer = setTimeout(() => this.startStagedAt(at, arming), Math.max(0, Math.floor(at - performance.now() - STAGE_SPIN_MS)));
  }

  private stopStageTimer(): void {
    if (this.stageTimer !== undefined) clearTimeout(this.stageTimer);
    this.stageTimer = undefined;
    this.stageTimerAt = Number.POSITIVE_INFINITY;
    // An older arming's turn-by-turn wait stops at its next turn.
    this.stageArming++;
  }

  private startStagedAt(at: number, arming: number): void {
    if (arming !== this.stageArming) return;
    const now = performance.now();
    if (now < at) {
      setImmediate(() => this.startStagedAt(at, arming));
      return;
    }
    this.stopStageTimer();
    // Their start has come: as many start now as slots are free; the rest start as slots free (slotFreed),
    // or are given back after the grace (armQueueTimer).
    this.startWaiting(now);
    // One reading for both checks, taken after the starts (a handler's start may take a while): a staged
    // offer whose start has passed by then waits for a slot and is given back after the grace (the queue
    // timer), one still ahead gets the stage timer. Read before the starts, an offer whose start passed
    // during them would have neither, and wait for a slot for ever.
    const after = performance.now();
    if (this.queue.anyWaiting(after)) this.armQueueTimer();
    this.armStageTimer(after);
  }

  /** Takes every queued and staged offer off, unstarted, and stops their timers; returns them (to give back, or to forget). */
  private dropQueue(): LeaseOffer[] {
    if (this.queueTimer !== undefined) clearTimeout(this.queueTimer);
    this.queueTimer = undefined;
    this.stopStageTimer();
    return this.queue.clear();
  }

  /** The offer under a run span of its own (child of the claim): the handler and the outcome carry the span's context. */
  private withRunSpan(offer: LeaseOffer): LeaseOffer {
    const span = this.tracing.startSpan('kairos.job.run', {
      parent: offer.traceparent ?? null,
      attributes: {
        'kairos.job.id': offer.jobId,
        'kairos.run.id': offer.runId,
        'kairos.task': offer.task,
        'kairos.attempt': offer.attempt,
        'kairos.lease.generation': Number(offer.generation),
        'kairos.agent.id': this.agentId,
      },
    });
    this.runSpans.set(leaseId(offer), span);
    return { ...offer, traceparent: span.traceparent };
  }

  private onDecided(offer: LeaseOffer, result: RunResult, durationMs: number): void {
    const error = result.kind === 'succeeded' || result.kind === 'lease-lost' ? undefined : result.error;
    if (this.reporting && result.kind !== 'lease-lost') {
      this.post({ type: 'outcome', lease: keyOf(offer), result: result.kind, error: error ?? '', finishedAtMs: Date.now(), traceparent: offer.traceparent ?? null });
    }
    const span = this.runSpans.size > 0 ? this.runSpans.get(leaseId(offer)) : undefined;
    if (span !== undefined) {
      this.runSpans.delete(leaseId(offer));
      span.setAttributes({ 'kairos.run.result': result.kind });
      span.end(result.kind === 'succeeded' ? {} : { error: error ?? result.kind });
    }
    const succeeded = result.kind === 'succeeded';
    // Successful runs are in the runs table; at info level the log would carry one line per job.
    if (!succeeded || this.logger.isLevelEnabled('debug')) {
      const fields = { jobId: offer.jobId, runId: offer.runId, task: offer.task, result: result.kind, durationMs: Math.round(durationMs) };
      if (succeeded) this.logger.debug(fields, 'run finished');
      else this.logger.warn({ ...fields, error: error ?? (result.kind === 'lease-lost' ? result.reason : undefined) }, 'run finished');
    }
    if (this.events.listenerCount('finished') > 0) {
      this.events.emit('finished', { ...runInfo(offer), result: result.kind, ...(error === undefined ? {} : { error }), durationMs });
    }
  }

  private emitSessionEvent(event: SessionEvent): void {
    switch (event.name) {
      case 'connected':
        this.events.emit('connected', {
          coordinatorId: event.coordinatorId,
          leaseMs: event.leaseMs,
          heartbeatIntervalMs: event.heartbeatIntervalMs,
        });
        return;
      case 'disconnected':
        this.events.emit('disconnected', { reason: event.reason });
        return;
      case 'outcome-acked':
        this.events.emit('outcome-acked', { jobId: event.jobId, generation: event.generation, result: event.result });
        return;
      case 'released':
        this.events.emit('released', { jobId: event.jobId, generation: event.generation, reason: event.reason });
        return;
    }
  }

  // --- drain and close --------------------------------------------------------

  drain(): Promise<void> {
    switch (this.lifecycle.kind) {
      case 'draining':
      case 'closing':
        return this.lifecycle.done;
      case 'stopped':
        return Promise.resolve();
      case 'running': {
        const done = this.runDrain();
        this.lifecycle = { kind: 'draining', done };
        return done;
      }
    }
  }

  private async runDrain(): Promise<void> {
    const graceMs = this.options.drainGraceMs;
    this.logger.info({ running: this.executor.running, graceMs }, 'draining: no new work; waiting for running jobs');
    const drained = new Promise<number>((resolve) => {
      this.drainedWaiter = resolve;
    });
    // What waits here for a slot is given back before the session hears of the drain, as it would have been
    // had it still been in the session's queue.
    for (const offer of this.dropQueue()) this.post({ type: 'release', lease: keyOf(offer), reason: 'agent is draining' });
    this.post({ type: 'drain' });
    const idle = await within(this.executor.whenIdle(), graceMs);
    if (!idle.done && this.lifecycle.kind === 'draining') {
      this.logger.warn({ running: this.executor.running, graceMs }, 'drain grace ran out: cancelling the remaining jobs');
      this.executor.abortAll({ kind: 'drain-grace', graceMs });
    }
    if (this.lifecycle.kind !== 'draining') return; // closed or failed meanwhile
    this.post({ type: 'work-done' });
    const flushed = await within(drained, this.flushTimeoutMs + SESSION_STOP_SLACK_MS);
    if (this.lifecycle.kind !== 'draining') return;
    await this.channel?.dispose();
    this.lifecycle = { kind: 'stopped' };
    const unackedOutcomes = flushed.done ? flushed.value : -1;
    await this.flushTraces();
    this.logger.info({ unackedOutcomes }, 'drained');
    this.events.emit('drained', { unackedOutcomes });
  }

  close(): Promise<void> {
    switch (this.lifecycle.kind) {
      case 'closing':
        return this.lifecycle.done;
      case 'stopped':
        return Promise.resolve();
      case 'running':
      case 'draining': {
        const done = this.runClose();
        this.lifecycle = { kind: 'closing', done };
        return done;
      }
    }
  }

  private async runClose(): Promise<void> {
    this.reporting = false;
    this.dropQueue();
    this.executor.abortAll({ kind: 'closed' });
    const closed = new Promise<void>((resolve) => {
      this.closedWaiter = resolve;
    });
    this.post({ type: 'close' });
    await within(closed, SESSION_STOP_SLACK_MS);
    await this.channel?.dispose();
    this.drainedWaiter?.(-1);
    this.lifecycle = { kind: 'stopped' };
    await this.flushTraces();
    this.logger.info('agent closed');
  }

  /** Sends the spans still buffered (bounded: an unreachable collector must not hold the exit). */
  private async flushTraces(): Promise<void> {
    const flushed = await within(
      this.tracing.shutdown().catch((error: unknown) => this.logger.warn({ err: error }, 'traces not flushed')),
      SESSION_STOP_SLACK_MS,
    );
    if (!flushed.done) this.logger.warn('traces not flushed in time');
  }

  private post(message: Parameters<SessionChannel['post']>[0]): void {
    if (this.lifecycle.kind === 'stopped') return;
    this.channel?.post(message);
  }
}

function keyOf(offer: LeaseOffer): LeaseKey {
  return { jobId: offer.jobId, generation: offer.generation };
}

function runInfo(offer: LeaseOffer): RunInfo {
  return { jobId: offer.jobId, generation: offer.generation, runId: offer.runId, task: offer.task };
}

/** Waits for `promise` at most `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<{ done: true; value: T } | { done: false }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<{ done: false }>((resolve) => {
    timer = setTimeout(() => resolve({ done: false }), ms);
  });
  try {
    return await Promise.race([promise.then((value) => ({ done: true as const, value })), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The PEM text of the TLS files, read once at start; an unreadable file is a ConfigError naming it. */
function readTls(tls: AgentOptions['tls']): SessionConfig['tls'] {
  if (tls === undefined) return undefined;
  const read = (file: string | undefined, variable: string) => {
    if (file === undefined) return undefined;
    try {
      return readFileSync(file, 'utf8');
    } catch (error: unknown) {
      throw new ConfigError(variable, `cannot read ${file}: ${(error as Error).message}`);
    }
  };
  const caPem = read(tls.caFile, 'KAIROS_TLS_CA');
  const certPem = read(tls.certFile, 'KAIROS_TLS_CLIENT_CERT');
  const keyPem = read(tls.keyFile, 'KAIROS_TLS_CLIENT_KEY');
  return {
    ...(caPem === undefined ? {} : { caPem }),
    ...(certPem === undefined ? {} : { certPem }),
    ...(keyPem === undefined ? {} : { keyPem }),
  };
}

/** The payload schemas of the handlers this agent runs that declared one (defineTask). */
function declaredSchemas(options: AgentOptions): Array<{ task: string; jsonSchema: string }> {
  const handlers = registeredHandlers(options);
  return options.tasks.flatMap((task) => {
    const schema = (handlers[task] as Partial<DefinedTask> | undefined)?.payloadJsonSchema;
    return schema === undefined ? [] : [{ task, jsonSchema: JSON.stringify(schema) }];
  });
}

