/**
 * Agent session: the AgentService/Connect stream, seen from the agent.
 *
 * Authority
 *   The coordinator (for the database) decides which leases exist; this
 *   session decides, for the agent, which leases it still trusts (through the
 *   LeaseKeeper) and is the only code that talks to the coordinator. Handler
 *   results are decided elsewhere (executor.ts, on the handler thread) and
 *   arrive here as `outcome` messages; the session only reports them.
 *   In production this class runs in a worker thread (session-worker.ts), so
 *   heartbeats and the self-fence keep time while handlers hog the main
 *   thread. Tests drive it in-thread through a MessageChannel. Per-call
 *   bookkeeping (Hello, heartbeat seq and send times) is in stream-link.ts;
 *   lease state and trust windows in lease-keeper.ts.
 *
 * Connection states (`SessionState`, a tagged union)
 *
 *     connecting ──Welcome──> open ──Drain──> draining ──Welcome on next──> open
 *         ^  │                 │                  │
 *         │  └─stream ends─┐   └──stream ends──┐  └──old stream ends──> connecting (next)
 *         └──backoff───────┴───────────────────┘
 *     any ──close / drain finished──> closed
 *
 *   Every change of state goes through `enter`, and the timers that belong to
 *   a state (a dial's backoff, the welcomed stream's heartbeat) live in it:
 *   `enter` clears whatever the next state does not carry over, so no timer
 *   outlives its state.
 *
 *   - connecting: no usable stream. `dial` is either waiting out a jittered
 *     backoff (100 ms doubling to 5 s) or a handshake: Hello sent (listing
 *     every held lease), Welcome not yet received.
 *   - open: a welcomed stream. Heartbeats every heartbeat_interval_ms list
 *     every held lease; outcomes are written and re-sent until acked.
 *   - draining: the COORDINATOR sent Drain: this stream keeps carrying
 *     heartbeats and outcomes while `next` dials a replacement on a new
 *     channel (a new TCP connection, which a Service routes to another
 *     coordinator; a draining coordinator refuses it with UNAVAILABLE). When `next` is welcomed the old
 *     stream is half-closed and `next` becomes open. Drain never stops work.
 *   - closed: terminal; nothing is written any more.
 *
 *   The AGENT's own drain (SIGTERM) is not a connection state: it must survive
 *   reconnects, so it is the separate `WorkMode` (accepting -> finishing ->
 *   flushing). While not accepting, every assignment is released at once and
 *   Draining is sent on every stream after its Welcome.
 *
 * Invariants
 *   - Hello is the first message of every stream, sent at dial time; its send
 *     time anchors the seq-0 RenewReply.
 *   - Heartbeat seq starts at 1 on every stream; the send time of each seq is
 *     remembered until it is answered (bounded), to anchor RenewReply.
 *   - Only messages from a live stream (the open one, the draining one, or the
 *     one being dialled) are read; anything but Welcome before Welcome is a
 *     protocol error that drops the stream.
 *   - Held leases that are not finished never exceed `capacity` (finished
 *     ones only wait for their ack; their slots are free), pre-dispatched
 *     ones aside (`capacity + preDispatchQueue`); offered and unfinished
 *     never exceed `capacity + handlerQueueLimit(capacity)` (the handler
 *     thread queues the extra ones, handler-queue.ts), leases staged there
 *     ahead of their start aside (decision 0030; with them, never more than
 *     `capacity + preDispatchQueue`): extra assignments,
 *     assignments of unknown tasks are released unstarted. Assignments whose anchor leaves too
 *     little to trust are held back (`confirming`), listed in a heartbeat sent
 *     at once, and offered only when its renewal answers; released if none
 *     does within the lease.
 *   - A lost lease is reported to the handler thread (abort) and never to the
 *     coordinator.
 *
 * Failure handling
 *   - Stream error or end: back off and redial; the new Hello re-announces the
 *     held leases and, after Welcome, every unacked outcome is re-sent.
 *   - Coordinator unreachable: trust windows keep running; when one runs out
 *     the handler is aborted (the self-fence) and the lease forgotten.
 *   - Drain deadline: if acks do not all arrive within `flushTimeoutMs` after
 *     the handlers finished, the session closes anyway and reports how many
 *     outcomes were left (their leases expire on the coordinator).
 */
import { performance } from 'node:perf_hooks';
import * as grpc from '@grpc/grpc-js';
import { AgentService, createGrpcClient, type Assignment, type CoordinatorMessage, type LeaseOutcome, type LeaseRef, type RenewReply } from '@kairos/proto';
import { backoffDelayMs, RECONNECT_BACKOFF } from './backoff';
import { MinHeap } from './min-heap';
import { StreamLink, type AgentClient } from './stream-link';
import { defaultTrustMarginMs, LeaseKeeper, type HeldLease } from './lease-keeper';
import { DbOffset } from './db-offset';
import { handlerQueueLimit } from '../runtime/handler-queue';
import {
  leaseId,
  sharedMonotonicMs,
  STAGE_AHEAD_MS,
  START_GRACE_MS,
  startGiveBackAt,
  WITHDRAWN_BEFORE_START,
  startQueueStalled,
  type LeaseKey,
  type LeaseLossReason,
  type LeaseLossSource,
  type LogLevel,
  type SessionEvent,
  type ToExecutor,
  type ToSession,
} from '../runtime/thread-messages';
import {
  ackResultOf,
  leaseKeyOf,
  leaseOutcomeOf,
  leaseRefOf,
  lossReasonOf,
  offerOf,
  renewStatusOf,
  welcomeInfo,
  type WelcomeInfo,
} from './wire';

/** pick_first over the resolved addresses in a random order (grpc-js reads `shuffleAddressList`). */
const SHUFFLED_PICK_FIRST = JSON.stringify({ loadBalancingConfig: [{ pick_first: { shuffleAddressList: true } }] });

/** What the session needs to know; plain data so it can be handed to a worker thread. */
export interface SessionConfig {
  readonly coordinator: string;
  readonly agentId: string;
  readonly tasks: readonly string[];
  readonly capacity: number;
  /**
   * Pre-dispatched leases held beyond `capacity` (Hello.pre_dispatch_queue):
   * waiting for their start, then for a free slot while slots keep freeing
   * (START_GRACE_MS). Unset: none.
   */
  readonly preDispatchQueue?: number;
  readonly token?: string | undefined;
  /**
   * TLS to the coordinator, as PEM text (the session may run in a worker
   * thread, so it gets material, not a credentials object). Unset: plaintext.
   */
  readonly tls?: { readonly caPem?: string; readonly certPem?: string; readonly keyPem?: string } | undefined;
  /** Overrides the default margin, max(200, 10% of lease_ms). */
  readonly trustMarginMs?: number | undefined;
  readonly version: string;
  /** JSON Schemas of payloads that SDK handlers declared (defineTask), advertised in Hello. */
  readonly payloadSchemas?: ReadonlyArray<{ readonly task: string; readonly jsonSchema: string }>;
  /** While draining, how long to wait for the last OutcomeAcks once every handler has ended. */
  readonly flushTimeoutMs: number;
  /** How long the start queue may stand still before its leases are given back; default START_GRACE_MS. */
  readonly startGraceMs?: number;
}

/** The handler-thread side, as the session sees it. */
export interface SessionHost {
  post(message: ToExecutor): void;
}

/** Injection points for tests. */
export interface SessionDeps {
  /** Monotonic clock in ms (default `performance.now`). */
  readonly now?: () => number;
  /** [0, 1) source for backoff jitter (default `Math.random`). */
  readonly random?: () => number;
  readonly credentials?: grpc.ChannelCredentials;
}

/** How the session is getting its next stream. */
type Dial =
  | { readonly kind: 'waiting'; readonly attempt: number; readonly timer: NodeJS.Timeout }
  | { readonly kind: 'handshake'; readonly attempt: number; readonly link: StreamLink };

/**
 * Connection state; see the diagram at the top of the file. Every timer that
 * belongs to a state lives in it (the dial's backoff, the heartbeat of the
 * welcomed stream), and `enter` is the only way to change state: what the new
 * state does not carry over is cleared on the way out.
 */
export type SessionState =
  | { readonly kind: 'connecting'; readonly dial: Dial }
  | { readonly kind: 'open'; readonly link: StreamLink; readonly welcome: WelcomeInfo; readonly heartbeat: NodeJS.Timeout }
  | {
      readonly kind: 'draining';
      readonly link: StreamLink;
      readonly welcome: WelcomeInfo;
      readonly heartbeat: NodeJS.Timeout;
      readonly next: Dial;
    }
  | { readonly kind: 'closed'; readonly reason: string };

/** The timers a state owns: its dial's backoff and its heartbeat. */
function timersOf(state: SessionState): NodeJS.Timeout[] {
  const timers: NodeJS.Timeout[] = [];
  if (state.kind === 'open' || state.kind === 'draining') timers.push(state.heartbeat);
  const dial = state.kind === 'connecting' ? state.dial : state.kind === 'draining' ? state.next : undefined;
  if (dial?.kind === 'waiting') timers.push(dial.timer);
  return timers;
}

/** The agent's own drain (SIGTERM), orthogonal to the connection state. */
type WorkMode =
  | { readonly kind: 'accepting' }
  /** Draining sent; running handlers are finishing on the handler thread. */
  | { readonly kind: 'finishing' }
  /** Every handler ended; waiting (bounded) for the last OutcomeAcks. */
  | { readonly kind: 'flushing'; readonly deadline: NodeJS.Timeout };

/** Outcomes per Outcomes message, to stay far below the 4 MiB message limit. */
const OUTCOMES_PER_MESSAGE = 256;
/** How long a half-closed stream may take to finish before it is cancelled. */
const CLOSE_WAIT_MS = 1_000;
/** A stream not welcomed within this time is dropped and dialled again (a hung coordinator). */
const HANDSHAKE_TIMEOUT_MS = 5_000;
/**
 * A millisecond timer fires up to a millisecond or two after its delay (whole
 * milliseconds, measured from the event loop's cached time). The start timer is
 * armed this much before the instant and the rest is waited one event-loop turn
 * at a time (setImmediate: I/O is still served), so a pre-dispatched lease
 * leaves for the handler thread within a few microseconds of its instant: at
 * most this long of busy turns per start instant.
 */
const START_SPIN_MS = 2;
/**
 * Extra heartbeats after a Welcome from a coordinator that pre-dispatches (ms
 * after it): each RenewReply is a reading of the database clock, and the start
 * of a pre-dispatched lease is only as close to its instant as the tightest
 * reading kept (db-offset.ts). At the normal interval (lease/3) a fresh agent
 * would have one or two readings for its first ten seconds; these give it
 * eight in under two seconds.
 */
const CLOCK_SYNC_BEATS_MS = [50, 100, 200, 300, 500, 800, 1_200, 1_800];
/**
 * Starts before reports: while the start queue holds leases whose start has
 * come (a spike draining through the handler thread's slots), finished
 * outcomes wait instead of leaving at the end of the turn, at most this long
 * (then they leave anyway, and again every this long while the queue stays
 * blocked). Reporting a run is the coordinator's and the database's work too
 * (a completion per job); done while a spike starts, it takes CPU from the
 * starts whenever they share cores. Outcomes are not late in any way that
 * matters: the lease stays held (and renewed) until the outcome is recorded.
 */
export const OUTCOME_HOLD_MAX_MS = 500;

export class AgentSession {
  private state: SessionState = { kind: 'closed', reason: 'not started' };
  private work: WorkMode = { kind: 'accepting' };
  private readonly keeper: LeaseKeeper;
  /** The channel the next stream is opened on; see `openLink`. */
  private client: AgentClient | undefined;
  private readonly credentials: grpc.ChannelCredentials;
  private readonly tasks: ReadonlySet<string>;
  private readonly now: () => number;
  private readonly random: () => number;
  /** Streams we half-closed after a coordinator Drain, until their status arrives. */
  private readonly retired = new Set<StreamLink>();
  private trustTimer: NodeJS.Timeout | undefined;
  /** Fires at the earliest start of a waiting (pre-dispatched) lease, or at the end of a queued one's grace. */
  private startTimer: NodeJS.Timeout | undefined;
  /** Bumped whenever the start timer is re-armed: a turn-by-turn wait (START_SPIN_MS) of an older arming stops. */
  private startArming = 0;
  /** The next extra heartbeat after a Welcome (CLOCK_SYNC_BEATS_MS). */
  private clockSyncTimer: NodeJS.Timeout | undefined;
  /** Some waiting lease's start has come but found no free slot: a slot that frees starts it. */
  private startsBlocked = false;
  /**
   * The starts (this thread's clock) of the leases staged on the handler thread, while each is still
   * ahead (`stagedAhead`): until its start a staged lease takes no slot, so it does not make the handler
   * thread's queue look blocked (`startsWaiting`).
   */
  private readonly stagedStarts = new MinHeap<number>((a, b) => a < b);
  private startSoon = false;
  /** A startDue that also fills the handler thread's queue is set for the next turn. */
  private queueAheadSoon = false;
  /** Monotonic time a handler-thread slot last freed (an outcome or a release arrived). */
  private lastSlotFreedAt = Number.NEGATIVE_INFINITY;
  /** When a queued lease whose start was `startAt` is given back if no slot frees first (START_GRACE_MS). */
  private readonly releaseAt = (startAt: number): number => startGiveBackAt(startAt, this.lastSlotFreedAt, this.startGraceMs);
  private get startGraceMs(): number {
    return this.config.startGraceMs ?? START_GRACE_MS;
  }
  /** This thread's clock against the database's, from Welcome and RenewReply (pre-dispatch). */
  private readonly dbOffset = new DbOffset();
  private outcomeFlushPending = false;
  /** Outcomes are held while the start queue is blocked (OUTCOME_HOLD_MAX_MS): fires when the hold ends. */
  private outcomeHoldTimer: NodeJS.Timeout | undefined;
  private holdCheckSoon = false;
  private linkSerial = 0;

  constructor(
    private readonly config: SessionConfig,
    private readonly host: SessionHost,
    deps: SessionDeps = {},
  ) {
    this.now = deps.now ?? (() => performance.now());
    this.random = deps.random ?? Math.random;
    this.tasks = new Set(config.tasks);
    this.keeper = new LeaseKeeper(config.trustMarginMs ?? defaultTrustMarginMs(0));
    this.credentials = deps.credentials ?? credentialsFor(config.tls);
  }

  /**
   * A channel of its own (its own TCP connection): grpc-js otherwise shares one
   * connection among every client with the same target and options.
   */
  private newClient(): AgentClient {
    return createGrpcClient(AgentService, this.config.coordinator, this.credentials, {
      'grpc.use_local_subchannel_pool': 1,
      // A target resolving to several coordinators (dns:/// of a headless Service): each
      // new connection tries them in a random order, so reconnecting agents spread out.
      'grpc.service_config': SHUFFLED_PICK_FIRST,
      // Let the channel retry as eagerly as the session does (grpc-js waits up to 120 s by default).
      'grpc.initial_reconnect_backoff_ms': RECONNECT_BACKOFF.initialMs,
      'grpc.max_reconnect_backoff_ms': RECONNECT_BACKOFF.maxMs,
    });
  }

  /** Dials the coordinator. Does not wait for it to answer. */
  start(): void {
    this.enter({ kind: 'connecting', dial: this.dial(0) });
  }

  /** The one door between states: timers the next state does not carry are cleared. */
  private enter(next: SessionState): void {
    const carried = new Set(timersOf(next));
    for (const timer of timersOf(this.state)) if (!carried.has(timer)) clearTimeout(timer);
    this.state = next;
  }

  /** A message from the handler thread. */
  handle(message: ToSession): void {
    if (message.type === 'close') {
      void this.shutdown('closed by the agent', false).then(() => this.host.post({ type: 'closed' }));
      return;
    }
    if (this.state.kind === 'closed') return;
    switch (message.type) {
      case 'started':
        if (!this.keeper.markStarted(message.lease, this.now())) {
          this.log('debug', { lease: leaseId(message.lease) }, 'started a lease that is no longer held');
        }
        if (this.outcomeHoldTimer !== undefined && !this.startsBlocked) this.releaseHeldOutcomesOnceStarted();
        return;
      case 'outcome': {
        const held = this.keeper.markFinished(message.lease, {
          result: message.result,
          error: message.error,
          finishedAtMs: message.finishedAtMs,
          traceparent: message.traceparent,
        });
        if (!held) {
          // Lost (or revoked) while the handler ran: the contract says report nothing.
          this.log('info', { lease: leaseId(message.lease), result: message.result }, 'outcome dropped: lease no longer held');
          return;
        }
        this.scheduleOutcomeFlush();
        this.slotFreed();
        return;
      }
      case 'release':
        this.release(message.lease, message.reason);
        this.slotFreed();
        return;
      case 'withdraw-refused':
        this.activeLink()?.write({ kind: { case: 'withdrawRefused', value: { leases: [leaseRefOf(message.lease)] } } });
        return;
      case 'drain':
        if (this.work.kind !== 'accepting') return;
        this.work = { kind: 'finishing' };
        for (const lease of this.keeper.dropUnconfirmed()) this.releaseUnconfirmed(lease, 'agent is draining');
        // Nothing waits to start any more: held outcomes leave now.
        this.startsBlocked = false;
        if (this.outcomeHoldTimer !== undefined) this.releaseHeldOutcomes();
        this.log('info', { held: this.keeper.size }, 'draining: no new work');
        this.activeLink()?.write({ kind: { case: 'draining', value: {} } });
        return;
      case 'work-done':
        if (this.work.kind === 'flushing') return;
        this.work = {
          kind: 'flushing',
          deadline: setTimeout(() => void this.finish('flush deadline passed'), this.config.flushTimeoutMs),
        };
        this.maybeFinishFlush();
        return;
    }
  }

  // ---------------------------------------------------------------------------
  // Dialling and stream lifecycle

  /** Starts attempt `attempt` (0 = at once, else after a backoff delay). */
  private dial(attempt: number): Dial {
    if (attempt === 0) return { kind: 'handshake', attempt, link: this.openLink() };
    const delayMs = backoffDelayMs(attempt, RECONNECT_BACKOFF, this.random);
    const timer = setTimeout(() => this.onDialTimer(timer), delayMs);
    this.log('debug', { attempt, delayMs }, 'reconnecting after backoff');
    return { kind: 'waiting', attempt, timer };
  }

  private onDialTimer(timer: NodeJS.Timeout): void {
    const state = this.state;
    if (state.kind === 'connecting' && state.dial.kind === 'waiting' && state.dial.timer === timer) {
      this.enter({ kind: 'connecting', dial: { kind: 'handshake', attempt: state.dial.attempt, link: this.openLink() } });
    } else if (state.kind === 'draining' && state.next.kind === 'waiting' && state.next.timer === timer) {
      this.enter({ ...state, next: { kind: 'handshake', attempt: state.next.attempt, link: this.openLink() } });
    }
  }

  /**
   * Opens a Connect call and writes Hello, listing every held lease.
   *
   * Every dial after the first opens a new channel, so a new TCP connection:
   * the old connection may lead to a coordinator that is draining or refusing
   * us, and behind a load balancer (a Kubernetes Service is L4) only a new
   * connection can reach another coordinator. Reusing it turned a coordinator
   * Drain into a busy loop of redials landing on the same coordinator (chaos
   * finding 3). Old channels are closed once no stream uses them.
   */
  private openLink(): StreamLink {
    const previous = this.client;
    this.client = this.newClient();
    if (previous !== undefined) this.closeIfUnused(previous);
    const link = StreamLink.open(
      this.client,
      {
        serial: ++this.linkSerial,
        token: this.config.token,
        now: this.now(),
        hello: {
          agentId: this.config.agentId,
          tasks: [...this.config.tasks],
          capacity: this.config.capacity,
          heldLeases: this.keeper.refs().map(leaseRefOf),
          version: this.config.version,
          payloadSchemas: (this.config.payloadSchemas ?? []).map((schema) => ({ task: schema.task, jsonSchema: schema.jsonSchema })),
          preDispatch: true,
          preDispatchQueue: this.config.preDispatchQueue ?? 0,
          slotsFreeOnOutcome: true,
        },
      },
      {
        onMessage: (l, message) => this.onMessage(l, message),
        onEnded: (l, reason) => this.onLinkEnded(l, reason),
        onWriteError: (l, error) => this.log('warn', { stream: l.serial, err: describe(error) }, 'write failed'),
      },
    );
    this.log('debug', { stream: link.serial, held: this.keeper.size }, 'hello sent');
    setTimeout(() => {
      if (this.isDialling(link)) this.failLink(link, `no Welcome within ${HANDSHAKE_TIMEOUT_MS} ms`);
    }, HANDSHAKE_TIMEOUT_MS).unref();
    return link;
  }

  private onLinkEnded(link: StreamLink, reason: string): void {
    this.retired.delete(link);
    this.handleLinkEnded(link, reason);
    this.closeIfUnused(link.client);
  }

  /** Every stream the session may still read from or write to. */
  private liveLinks(): StreamLink[] {
    const state = this.state;
    const links = [...this.retired];
    if (state.kind === 'open' || state.kind === 'draining') links.push(state.link);
    const dial = state.kind === 'connecting' ? state.dial : state.kind === 'draining' ? state.next : undefined;
    if (dial?.kind === 'handshake') links.push(dial.link);
    return links;
  }

  private closeIfUnused(client: AgentClient): void {
    if (client === this.client && this.state.kind !== 'closed') return;
    if (this.liveLinks().some((l) => l.client === client && !l.ended)) return;
    client.close();
  }

  private handleLinkEnded(link: StreamLink, reason: string): void {
    const state = this.state;
    switch (state.kind) {
      case 'open':
        if (state.link !== link) return;
        this.enter({ kind: 'connecting', dial: this.dial(1) });
        this.disconnected(link, reason);
        return;
      case 'draining':
        if (state.link === link) {
          this.enter({ kind: 'connecting', dial: state.next });
          this.disconnected(link, reason);
        } else if (state.next.kind === 'handshake' && state.next.link === link) {
          this.log('warn', { stream: link.serial, reason }, 'replacement stream failed');
          this.enter({ ...state, next: this.dial(state.next.attempt + 1) });
        }
        return;
      case 'connecting':
        if (state.dial.kind !== 'handshake' || state.dial.link !== link) return;
        this.log('warn', { stream: link.serial, attempt: state.dial.attempt + 1, reason }, 'could not connect to the coordinator');
        this.enter({ kind: 'connecting', dial: this.dial(state.dial.attempt + 1) });
        return;
      case 'closed':
        return;
    }
  }

  private disconnected(link: StreamLink, reason: string): void {
    this.log('warn', { stream: link.serial, reason, held: this.keeper.size }, 'disconnected from the coordinator');
    this.emit({ name: 'disconnected', reason });
  }

  /** Half-closes a stream we no longer use (after a coordinator Drain). */
  private retire(link: StreamLink): void {
    if (!link.writable) return;
    this.retired.add(link);
    link.end();
  }

  /** Drops a misbehaving stream; its status event then drives the reconnect. */
  private failLink(link: StreamLink, reason: string): void {
    this.log('warn', { stream: link.serial, reason }, 'dropping stream');
    link.cancel();
  }

  /** The welcomed stream heartbeats and outcomes go to (the old one while draining). */
  private activeLink(): StreamLink | undefined {
    const state = this.state;
    return state.kind === 'open' || state.kind === 'draining' ? state.link : undefined;
  }

  private isWelcomed(link: StreamLink): boolean {
    return this.activeLink() === link;
  }

  private isDialling(link: StreamLink): boolean {
    const state = this.state;
    const dial = state.kind === 'connecting' ? state.dial : state.kind === 'draining' ? state.next : undefined;
    return dial?.kind === 'handshake' && dial.link === link;
  }

  // ---------------------------------------------------------------------------
  // Coordinator messages

  private onMessage(link: StreamLink, message: CoordinatorMessage): void {
    const kind = message.kind;
    if (kind.case === 'welcome') {
      if (this.isDialling(link)) {
        this.dbOffset.record(kind.value.dbTimeMs, kind.value.dbTimeErrorMs, link.helloSentAt, this.now(), kind.value.heldMs);
        this.onWelcome(link, welcomeInfo(kind.value));
        if (kind.value.dbTimeMs > 0) this.syncClock(link, 0);
      }
      else this.log('warn', { stream: link.serial }, 'unexpected Welcome ignored');
      return;
    }
    if (!this.isWelcomed(link)) {
      if (this.isDialling(link)) this.failLink(link, `protocol error: ${kind.case ?? 'empty message'} before Welcome`);
      return;
    }
    switch (kind.case) {
      case 'assignments':
        this.onAssignments(link, kind.value.assignments);
        return;
      case 'renewReply':
        this.onRenewReply(link, kind.value);
        return;
      case 'outcomeAcks':
        for (const ack of kind.value.acks) {
          const lease = this.keeper.acknowledge(leaseKeyOf(ack));
          if (lease === undefined) continue;
          const result = ackResultOf(ack.result);
          if (result === 'STALE') this.log('warn', { lease: lease.id }, 'outcome rejected as stale: the lease had expired');
          this.emit({ name: 'outcome-acked', jobId: lease.key.jobId, generation: lease.key.generation, result });
        }
        this.maybeFinishFlush();
        return;
      case 'revoke': {
        const reason = lossReasonOf(kind.value.reason);
        for (const ref of kind.value.leases) {
          if (reason === 'cancelled') {
            // An operator's abort: the lease stays held until the handler has stopped and its outcome is reported.
            this.abortRun(leaseKeyOf(ref), 'revoke');
            continue;
          }
          const lease = this.keeper.drop(leaseKeyOf(ref));
          if (lease !== undefined) this.lose(lease, reason, 'revoke');
        }
        this.afterLeaseChange();
        return;
      }
      case 'drain':
        this.onCoordinatorDrain(link, kind.value.graceMs);
        return;
      case 'withdraw':
        this.onWithdraw(link, kind.value.leases);
        return;
      case undefined:
        this.log('warn', { stream: link.serial }, 'empty or unknown coordinator message ignored');
        return;
    }
  }

  /** The extra heartbeats of CLOCK_SYNC_BEATS_MS, from the `index`th, while `link` stays the active stream. */
  private syncClock(link: StreamLink, index: number): void {
    if (this.clockSyncTimer !== undefined) clearTimeout(this.clockSyncTimer);
    this.clockSyncTimer = undefined;
    const at = CLOCK_SYNC_BEATS_MS[index];
    if (at === undefined) return;
    const after = index === 0 ? at : at - CLOCK_SYNC_BEATS_MS[index - 1]!;
    this.clockSyncTimer = setTimeout(() => {
      this.clockSyncTimer = undefined;
      if (this.state.kind !== 'open' || this.state.link !== link) return;
      this.beat();
      this.syncClock(link, index + 1);
    }, after);
  }

  private onWelcome(link: StreamLink, welcome: WelcomeInfo): void {
    const previous = this.state;
    if (previous.kind === 'draining') this.retire(previous.link);
    this.enter({ kind: 'open', link, welcome, heartbeat: setInterval(() => this.beat(), welcome.heartbeatIntervalMs) });
    this.keeper.setMargin(this.config.trustMarginMs ?? defaultTrustMarginMs(welcome.leaseMs));
    this.log('info', { stream: link.serial, ...welcome, held: this.keeper.size }, 'connected to the coordinator');
    this.emit({ name: 'connected', ...welcome });
    if (this.work.kind !== 'accepting') link.write({ kind: { case: 'draining', value: {} } });
    // Whatever was sent on an earlier stream may never have arrived.
    this.keeper.forgetOutcomeSends();
    this.flushOutcomes(link);
  }

  private onAssignments(link: StreamLink, assignments: readonly Assignment[]): void {
    const receivedAt = this.now();
    const released: { key: LeaseKey; reason: string }[] = [];
    let confirm = false;
    for (const assignment of assignments) {
      const key = leaseKeyOf(assignment);
      if (this.keeper.get(key) !== undefined) continue; // a duplicate: already running it
      const other = this.keeper.otherGeneration(key);
      if (other !== undefined && other.key.generation > key.generation) {
        released.push({ key, reason: 'older than a held generation' });
        continue;
      }
      if (other !== undefined) {
        // The job moved on to a newer generation, so ours is gone.
        this.keeper.drop(other.key);
        this.lose(other, 'superseded', 'assignment');
      }
      // Anchor the lease at the send time of the heartbeat the coordinator had seen
      // before it claimed (never later than receipt): a slow delivery shortens the
      // trust window instead of stretching it past the lease.
      const refusal = this.refusal(assignment);
      if (refusal !== undefined) {
        released.push({ key, reason: refusal });
        continue;
      }
      const sentAt = link.sendTimeOf(assignment.anchorSeq);
      const anchoredAt = Math.min(receivedAt, sentAt ?? receivedAt);
      const remainingMs = assignment.leaseRemainingMs - (receivedAt - anchoredAt);
      // Pre-dispatched: its start, by this thread's clock. Without a clock reading yet it is confirmed
      // first (the renewal that confirms it brings one).
      const startAt = assignment.startAtMs > 0 ? this.dbOffset.toLocal(assignment.startAtMs) : receivedAt;
      if (sentAt === undefined || remainingMs <= this.keeper.margin || startAt === undefined) {
        // The anchor is too old (the claim was held up, e.g. in a paused database)
        // or unknown. The lease itself may be fresh: confirm it with a heartbeat
        // instead of releasing it, and start it only when the renewal answers.
        if (assignment.leaseRemainingMs <= this.keeper.margin) {
          released.push({ key, reason: `lease too short to trust (${assignment.leaseRemainingMs} ms, margin ${this.keeper.margin} ms)` });
          continue;
        }
        this.keeper.holdUnconfirmed(key, assignment.task, receivedAt, receivedAt + assignment.leaseRemainingMs, offerOf(assignment), assignment.startAtMs);
        this.log('debug', { lease: leaseId(key), anchorSeq: String(assignment.anchorSeq), leftMs: Math.round(remainingMs) }, 'assignment held until a renewal confirms it');
        confirm = true;
        continue;
      }
      if (assignment.startAtMs > 0) {
        // Pre-dispatched: started at its instant when a slot is free (startDue), also when that has passed.
        this.keeper.holdWaiting(key, assignment.task, assignment.leaseRemainingMs, anchoredAt, offerOf(assignment), startAt);
        this.log('debug', { lease: leaseId(key), startInMs: Math.round(startAt - receivedAt), clockErrorMs: Number(this.dbOffset.errorMs.toFixed(2)) }, 'pre-dispatched: waiting for its start');
        continue;
      }
      this.keeper.hold(key, assignment.task, assignment.leaseRemainingMs, anchoredAt);
      this.host.post({ type: 'offer', lease: offerOf(assignment) });
    }
    if (confirm) this.beat();
    this.giveBack(link, released, 'assignment');
    this.scheduleTrustCheck();
    this.scheduleStart();
  }

  /**
   * Arms one timer for the earliest start among waiting (pre-dispatched) leases, or the end of the
   * grace of one whose start found no free slot: called where leases start waiting. One that stops
   * waiting otherwise (withdrawn, aborted, lost, drained) needs no call: the timer then finds nothing
   * due and re-arms for the next.
   */
  private scheduleStart(): void {
    if (this.startTimer !== undefined) clearTimeout(this.startTimer);
    this.startTimer = undefined;
    if (this.state.kind === 'closed') return;
    const now = this.now();
    // A lease whose start has come is tried at once, unless the queue is known to be waiting for a slot
    // (then a slot that frees starts it, and the timer is for giving it back).
    const arming = ++this.startArming;
    const at = this.keeper.nextStart(now, this.startsBlocked ? this.releaseAt : () => now);
    if (at === undefined) return;
    if (at > now && !this.startsBlocked && this.stageRoom() > 0) {
      // Staged STAGE_AHEAD_MS before its start (startDue): the handler thread times the start itself.
      const stageIn = Math.max(0, Math.ceil(at - STAGE_AHEAD_MS - now));
      this.startTimer = setTimeout(() => {
        if (arming === this.startArming && this.state.kind !== 'closed') this.startDue();
      }, stageIn);
      return;
    }
    const wait = at - now;
    if (wait <= START_SPIN_MS) this.startAt(at, arming);
    else this.startTimer = setTimeout(() => this.startAt(at, arming), Math.floor(wait - START_SPIN_MS));
  }

  /** Runs startDue once this thread's clock reads `at`, waiting the last stretch turn by turn (START_SPIN_MS). */
  private startAt(at: number, arming: number): void {
    // An older arming's wait stops here (scheduleStart re-arms, shutdown closes).
    if (arming !== this.startArming || this.state.kind === 'closed') return;
    if (this.now() < at) {
      setImmediate(() => this.startAt(at, arming));
      return;
    }
    this.startDue();
  }

  /**
   * Offers the waiting leases whose start has come, as many as the handler
   * thread has free slots, earliest first, in one turn; gives back those the
   * queue stopped moving for (START_GRACE_MS).
   */
  private startDue(queueAhead = false): void {
    const now = this.now();
    // The free slots' offers leave in this turn's batch. Then, if more wait, up to a slot-full beyond them
    // in the next turn's: those wait on the handler thread and start as its slots free, with no round trip
    // through this thread between one wave of slots and the next (handler-queue.ts), and the first wave is
    // not held back by packing the second.
    const handlerQueue = handlerQueueLimit(this.config.capacity);
    const room = this.config.capacity + (queueAhead ? handlerQueue : 0) - this.keeper.handlerSlotsInUse();
    const { offers, blocked } = this.keeper.startDue(now, room);
    for (const offer of offers) this.host.post({ type: 'offer', lease: offer });
    if (blocked && !queueAhead && !this.queueAheadSoon && handlerQueue > 0) {
      this.queueAheadSoon = true;
      setImmediate(() => {
        this.queueAheadSoon = false;
        if (this.state.kind !== 'closed') this.startDue(true);
      });
    }
    this.startsBlocked = blocked;
    if (!blocked) this.stage(now);
    // The queue moved on: outcomes held while it was blocked leave once its last offers have started.
    if (!blocked && this.outcomeHoldTimer !== undefined) this.releaseHeldOutcomesOnceStarted();
    if (blocked) {
      const late = this.keeper.overdue(now, this.releaseAt);
      if (late.length > 0) {
        const reason = startQueueStalled(this.startGraceMs);
        this.giveBack(this.activeLink(), late.map((lease) => ({ key: lease.key, reason })), 'lease');
        this.startsBlocked = this.keeper.anyStarted(now);
        this.afterLeaseChange();
      }
    }
    this.scheduleStart();
  }

  /**
   * Offers the waiting leases whose start is at most STAGE_AHEAD_MS away to the handler thread now, each
   * with its start on the shared clock (decision 0030): a spike's offers cross before it is due, and the
   * handler thread starts them on the instant and drains them through its slots with no round trip to
   * this thread. Called when no lease whose start has come waits for a slot (those go first).
   */
  private stage(now: number): void {
    const room = this.stageRoom();
    if (room <= 0) return;
    const staged = this.keeper.stageDue(now + STAGE_AHEAD_MS, room);
    if (staged.length === 0) return;
    const toShared = this.sharedClockOffset();
    for (const { offer, startAt, trustedUntil } of staged) {
      this.host.post({ type: 'offer', lease: offer, staged: { startAt: startAt + toShared, trustUntil: trustedUntil + toShared } });
      this.stagedStarts.push(startAt);
    }
  }

  /** How many staged leases' starts are still ahead at `now`. */
  private stagedAhead(now: number): number {
    while ((this.stagedStarts.peek() ?? Number.POSITIVE_INFINITY) <= now) this.stagedStarts.pop();
    return this.stagedStarts.size;
  }

  /** How many more leases the handler thread may hold: all the agent may hold, less those it has. */
  private stageRoom(): number {
    return this.holdLimit - this.keeper.handlerSlotsInUse();
  }

  /** Unfinished leases the agent may hold: its slots and its start queue (pre-dispatched leases). */
  private get holdLimit(): number {
    return this.config.capacity + (this.config.preDispatchQueue ?? 0);
  }

  /**
   * What to add to a reading of this thread's clock for the clock both threads share (sharedMonotonicMs).
   * Both read now, together: a `now` read earlier in the turn may be a while ago.
   */
  private sharedClockOffset(): number {
    return sharedMonotonicMs() - this.now();
  }

  /**
   * A handler-thread slot freed (an outcome or a release arrived): a lease
   * queued for a slot starts, once per turn however many freed in it.
   */
  private slotFreed(): void {
    this.lastSlotFreedAt = this.now();
    if (!this.startsBlocked || this.startSoon) return;
    this.startSoon = true;
    queueMicrotask(() => {
      this.startSoon = false;
      if (this.state.kind !== 'closed') this.startDue();
    });
  }

  /**
   * Withdraw: leases the handler thread never got are given back (Release) and
   * will never start; offered ones are asked of the handler thread, which gives
   * back those it has not started (a `release`) and keeps the others (a
   * `withdraw-refused`, answered WithdrawRefused); leases not ours are refused.
   */
  private onWithdraw(link: StreamLink, refs: readonly LeaseRef[]): void {
    const released: { key: LeaseKey; reason: string }[] = [];
    const refused: LeaseRef[] = [];
    for (const ref of refs) {
      const key = leaseKeyOf(ref);
      const lease = this.keeper.withdraw(key);
      if (lease !== undefined) released.push({ key: lease.key, reason: WITHDRAWN_BEFORE_START });
      else if (this.keeper.get(key)?.phase.kind === 'offered') this.host.post({ type: 'withdraw', lease: key });
      else refused.push(ref);
    }
    this.giveBack(link, released, 'lease');
    if (refused.length > 0) link.write({ kind: { case: 'withdrawRefused', value: { leases: refused } } });
    this.afterLeaseChange();
  }

  /** Why an assignment cannot be taken, or undefined if it can. */
  private refusal(assignment: Assignment): string | undefined {
    if (this.work.kind !== 'accepting') return 'agent is draining';
    if (!this.tasks.has(assignment.task)) return `task "${assignment.task}" is not served by this agent`;
    // Finished leases awaiting their ack do not count: their slots are free (Hello.slots_free_on_outcome).
    if (assignment.startAtMs > 0) {
      const limit = this.holdLimit;
      if (this.keeper.unfinished >= limit) return `over capacity and start queue (${limit})`;
    } else if (this.keeper.unfinished >= this.config.capacity) {
      return `over capacity (${this.config.capacity})`;
    }
    return undefined;
  }

  private onRenewReply(link: StreamLink, reply: RenewReply): void {
    const sentAt = link.sendTimeOf(reply.seq);
    if (sentAt !== undefined) this.dbOffset.record(reply.dbTimeMs, reply.dbTimeErrorMs, sentAt, this.now(), reply.heldMs);
    if (sentAt === undefined) {
      this.log('warn', { stream: link.serial, seq: String(reply.seq) }, 'renew reply for an unknown heartbeat: only losses applied');
    }
    const trusted: { lease: LeaseKey; until: number }[] = [];
    let toShared: number | undefined;
    for (const status of reply.statuses) {
      const renewal = renewStatusOf(status);
      if (renewal === undefined) continue;
      const key = leaseKeyOf(status);
      const aborted = renewal.kind === 'held' && renewal.abortRequested === true;
      const phase = this.keeper.get(key)?.phase.kind;
      if (aborted && (phase === 'confirming' || phase === 'waiting')) {
        // Aborted before the handler thread ever got it: reported CANCELLED, never started.
        this.abortRun(key, 'renew-reply');
        continue;
      }
      const verdict = this.keeper.applyRenewal(key, renewal, sentAt);
      if (verdict.kind === 'lost') this.lose(verdict.lease, verdict.reason, 'renew-reply');
      // An offered lease the handler thread has not started may be staged there: its trust window moved.
      if (verdict.kind === 'renewed' && verdict.lease.phase.kind === 'offered') trusted.push({ lease: verdict.lease.key, until: verdict.lease.trustedUntil + (toShared ??= this.sharedClockOffset()) });
      if (verdict.kind === 'confirmed') {
        this.log('debug', { lease: verdict.lease.id }, 'assignment confirmed by a renewal');
        if (verdict.startAtDbMs > 0) {
          // Pre-dispatched: waits for its start and a free slot like any other (startDue).
          this.keeper.wait(key, verdict.offer, this.dbOffset.toLocal(verdict.startAtDbMs) ?? this.now());
        } else {
          this.host.post({ type: 'offer', lease: verdict.offer });
        }
      }
      // Also when the verdict is `ignored` (an older reply): an abort is news whatever the anchor.
      if (aborted) this.abortRun(key, 'renew-reply');
    }
    if (trusted.length > 0) this.host.post({ type: 'trust', leases: trusted });
    link.answered(reply.seq);
    this.afterLeaseChange();
    this.scheduleStart();
  }

  private onCoordinatorDrain(link: StreamLink, graceMs: number): void {
    const state = this.state;
    if (state.kind !== 'open' || state.link !== link) return;
    this.log('info', { stream: link.serial, graceMs }, 'coordinator is draining this stream: moving to a new one');
    this.enter({ kind: 'draining', link, welcome: state.welcome, heartbeat: state.heartbeat, next: this.dial(0) });
  }

  // ---------------------------------------------------------------------------
  // Leases

  /** Gives back a confirming lease (never offered, so the handler thread knows nothing of it). */
  private releaseUnconfirmed(lease: HeldLease, reason: string): void {
    this.giveBack(this.activeLink(), [{ key: lease.key, reason }], 'assignment');
  }

  /**
   * The one way leases go back unstarted: one Release message on `link` for
   * all of them (none when no stream is up: they then simply expire), and a
   * log line and a `released` event for each. `assignment`: refused or never
   * confirmed on arrival; `lease`: the handler thread gave it back.
   */
  private giveBack(link: StreamLink | undefined, items: ReadonlyArray<{ key: LeaseKey; reason: string }>, what: 'assignment' | 'lease'): void {
    if (items.length === 0) return;
    // One Release per reason: the coordinator records it in each released run.
    const byReason = new Map<string, LeaseKey[]>();
    for (const { key, reason } of items) {
      const keys = byReason.get(reason);
      if (keys === undefined) byReason.set(reason, [key]);
      else keys.push(key);
    }
    for (const [reason, keys] of byReason) link?.write({ kind: { case: 'release', value: { leases: keys.map(leaseRefOf), reason } } });
    for (const { key, reason } of items) {
      if (what === 'assignment') this.log('warn', { lease: leaseId(key), reason }, 'assignment released unstarted');
      else this.log('info', { lease: leaseId(key), reason }, 'lease released unstarted');
      this.emit({ name: 'released', jobId: key.jobId, generation: key.generation, reason });
    }
  }

  /**
   * An operator aborted the run holding `key`. A lease the handler thread
   * never got is reported CANCELLED without starting; one it has is stopped
   * there (the handler's signal fires, an exec child gets SIGTERM), and its
   * outcome arrives as usual. Repeats (every renewal says it again) do nothing.
   */
  private abortRun(key: LeaseKey, source: LeaseLossSource): void {
    const lease = this.keeper.markAborting(key);
    if (lease === undefined) return;
    this.log('info', { lease: lease.id, task: lease.task, phase: lease.phase.kind, source }, 'run aborted by an operator: stopping it');
    if (lease.phase.kind === 'confirming' || lease.phase.kind === 'waiting') {
      this.keeper.finishUnstarted(key, {
        result: 'cancelled',
        error: 'aborted by an operator before it started',
        finishedAtMs: Date.now(),
        traceparent: lease.phase.offer.traceparent ?? null,
      });
      this.scheduleOutcomeFlush();
      return;
    }
    this.host.post({ type: 'abort', lease: key, source });
  }

  /** Tells the handler thread a lease is gone (it aborts the handler, reports nothing). */
  private lose(lease: HeldLease, reason: LeaseLossReason, source: LeaseLossSource): void {
    if (lease.phase.kind === 'confirming' || lease.phase.kind === 'waiting') {
      // Never offered: there is no handler to stop.
      this.log('info', { lease: lease.id, reason, source }, 'unconfirmed assignment lost before it started');
      return;
    }
    this.log('warn', { lease: lease.id, task: lease.task, phase: lease.phase.kind, reason, source }, 'lease lost');
    this.host.post({ type: 'lost', lease: lease.key, reason, source });
  }

  private release(key: LeaseKey, reason: string): void {
    const lease = this.keeper.drop(key);
    if (lease === undefined) return;
    this.giveBack(this.activeLink(), [{ key: lease.key, reason }], 'lease');
    this.afterLeaseChange();
  }

  private afterLeaseChange(): void {
    this.scheduleTrustCheck();
    this.maybeFinishFlush();
  }

  /** Arms one timer for the earliest trust deadline. */
  private scheduleTrustCheck(): void {
    if (this.trustTimer !== undefined) clearTimeout(this.trustTimer);
    this.trustTimer = undefined;
    if (this.state.kind === 'closed') return;
    const deadline = this.keeper.nextTrustDeadline();
    if (deadline === undefined) return;
    // +1: timers have millisecond granularity and must not fire before the deadline.
    const delayMs = Math.max(0, Math.ceil(deadline - this.now()) + 1);
    this.trustTimer = setTimeout(() => this.checkTrust(), delayMs);
  }

  private checkTrust(): void {
    this.trustTimer = undefined;
    const now = this.now();
    const fenced = this.keeper.fenceExpired(now, {
      result: 'cancelled',
      error: 'self-fenced: the lease could not be renewed in time, so the handler was aborted',
      traceparent: null,
      finishedAtMs: Date.now(),
    });
    for (const lease of fenced) this.lose(lease, 'trust-window', 'trust-window');
    if (fenced.length > 0) this.flushOutcomes(this.activeLink());
    for (const lease of this.keeper.expireUnconfirmed(now)) this.releaseUnconfirmed(lease, 'no renewal confirmed it within its lease');
    this.afterLeaseChange();
  }

  // ---------------------------------------------------------------------------
  // Heartbeats and outcomes

  /** One heartbeat: every held lease, then any outcome due for a re-send. */
  private beat(): void {
    const link = this.activeLink();
    if (link === undefined) return;
    link.heartbeat(this.keeper.refs().map(leaseRefOf), this.now());
    // While outcomes are held for a blocked start queue, the hold's end sends them.
    if (this.outcomeHoldTimer === undefined) this.flushOutcomes(link);
  }

  /**
   * Outcomes finishing in the same turn of the event loop travel in one message
   * (and come back in one ack): under load this turns one message per job into
   * one per batch, on both sides of the stream.
   */
  private scheduleOutcomeFlush(): void {
    if (this.outcomeFlushPending || this.outcomeHoldTimer !== undefined) return;
    this.outcomeFlushPending = true;
    setImmediate(() => {
      this.outcomeFlushPending = false;
      if (this.state.kind === 'closed') return;
      if (this.startsWaiting() && this.work.kind === 'accepting') {
        // Starts first (OUTCOME_HOLD_MAX_MS): the queue unblocking, or the hold's end, sends them.
        this.outcomeHoldTimer = setTimeout(() => this.releaseHeldOutcomes(), OUTCOME_HOLD_MAX_MS);
        return;
      }
      this.flushOutcomes(this.activeLink());
    });
  }

  /**
   * Whether leases whose start has come wait for a slot: in this thread's start
   * queue, or offered beyond the handler thread's slots (its own queue).
   */
  private startsWaiting(): boolean {
    return this.startsBlocked || this.keeper.handlerSlotsInUse() - this.stagedAhead(this.now()) > this.config.capacity;
  }

  /**
   * The start queue emptied while outcomes were held: they leave once every
   * lease offered to the handler thread has started (the queue's last offers
   * are not raced by the reports), checked once per turn.
   */
  private releaseHeldOutcomesOnceStarted(): void {
    if (this.holdCheckSoon) return;
    this.holdCheckSoon = true;
    queueMicrotask(() => {
      this.holdCheckSoon = false;
      // Staged leases whose start is still ahead do not count: the held outcomes need not wait for them.
      if (this.outcomeHoldTimer !== undefined && !this.startsBlocked && this.keeper.offeredCount() <= this.stagedAhead(this.now())) {
        this.releaseHeldOutcomes();
      }
    });
  }

  /** Ends a hold of outcomes (OUTCOME_HOLD_MAX_MS): they are written now. */
  private releaseHeldOutcomes(): void {
    if (this.outcomeHoldTimer !== undefined) clearTimeout(this.outcomeHoldTimer);
    this.outcomeHoldTimer = undefined;
    if (this.state.kind !== 'closed') this.flushOutcomes(this.activeLink());
  }

  /**
   * Writes outcomes not yet sent on this stream, and re-sends those unacked for
   * two heartbeat intervals (duplicates are harmless: the write is fenced).
   */
  private flushOutcomes(link: StreamLink | undefined): void {
    const state = this.state;
    if (link === undefined || !link.writable || (state.kind !== 'open' && state.kind !== 'draining')) return;
    const due = this.keeper.outcomesDue(this.now(), 2 * state.welcome.heartbeatIntervalMs);
    for (let i = 0; i < due.length; i += OUTCOMES_PER_MESSAGE) {
      const outcomes: LeaseOutcome[] = [];
      for (const lease of due.slice(i, i + OUTCOMES_PER_MESSAGE)) {
        if (lease.phase.kind === 'finished') outcomes.push(leaseOutcomeOf(lease.key, lease.phase.outcome));
      }
      link.write({ kind: { case: 'outcomes', value: { outcomes } } });
    }
  }

  // ---------------------------------------------------------------------------
  // Shutdown

  private maybeFinishFlush(): void {
    if (this.work.kind === 'flushing' && this.keeper.size === 0) void this.finish('every outcome acknowledged');
  }

  /** End of the agent's drain: close the stream and tell the handler thread. */
  private async finish(reason: string): Promise<void> {
    if (this.state.kind === 'closed') return;
    const unacked = this.keeper.size;
    this.log(unacked === 0 ? 'info' : 'warn', { reason, unacked }, 'drain finished');
    await this.shutdown(reason, true);
    this.host.post({ type: 'drained', unacked });
  }

  /**
   * Stops everything. `graceful`: half-close welcomed streams (the contract's
   * "closes its side") and give them a moment to finish; otherwise cancel.
   */
  private async shutdown(reason: string, graceful: boolean): Promise<void> {
    const state = this.state;
    if (state.kind === 'closed') return;
    this.enter({ kind: 'closed', reason }); // clears the heartbeat and any dial backoff
    if (this.trustTimer !== undefined) clearTimeout(this.trustTimer);
    if (this.startTimer !== undefined) clearTimeout(this.startTimer);
    if (this.clockSyncTimer !== undefined) clearTimeout(this.clockSyncTimer);
    if (this.outcomeHoldTimer !== undefined) clearTimeout(this.outcomeHoldTimer);
    this.startTimer = undefined;
    this.clockSyncTimer = undefined;
    this.outcomeHoldTimer = undefined;
    this.trustTimer = undefined;
    if (this.work.kind === 'flushing') clearTimeout(this.work.deadline);
    const links = new Set(this.retired);
    if (state.kind === 'open' || state.kind === 'draining') links.add(state.link);
    const dials = state.kind === 'connecting' ? [state.dial] : state.kind === 'draining' ? [state.next] : [];
    for (const dial of dials) if (dial.kind === 'handshake') links.add(dial.link);
    for (const link of links) {
      if (graceful && link.writable && this.isWelcomedLink(state, link)) link.end();
      else link.cancel();
    }
    if (graceful) {
      const waited = await Promise.race([
        Promise.all([...links].map((link) => link.settled)).then(() => true),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), CLOSE_WAIT_MS).unref()),
      ]);
      if (!waited) for (const link of links) link.cancel();
    }
    for (const link of links) link.client.close();
    this.client?.close();
  }

  private isWelcomedLink(state: SessionState, link: StreamLink): boolean {
    return (state.kind === 'open' || state.kind === 'draining') && state.link === link;
  }

  // ---------------------------------------------------------------------------

  private emit(event: SessionEvent): void {
    this.host.post({ type: 'event', event });
  }

  private log(level: LogLevel, fields: Record<string, unknown>, msg: string): void {
    this.host.post({ type: 'log', level, fields, msg });
  }
}

function credentialsFor(tls: SessionConfig['tls']): grpc.ChannelCredentials {
  if (tls === undefined) return grpc.credentials.createInsecure();
  const pem = (text: string | undefined) => (text === undefined ? null : Buffer.from(text, 'utf8'));
  return grpc.credentials.createSsl(pem(tls.caPem), pem(tls.keyPem), pem(tls.certPem));
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
