/**
 * A scriptable stand-in for the coordinator's AgentService, served by a real
 * grpc-js server on 127.0.0.1 (port 0 unless told otherwise). It records
 * every agent message, answers Hello/Heartbeat/Outcomes automatically
 * according to policies the test can change at any time, and lets the test
 * send assignments, revokes and drains, or drop a stream.
 */
import { performance } from 'node:perf_hooks';
import type { JsonObject, MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import {
  addGrpcService,
  AgentService,
  KAIROS_SERVER_OPTIONS,
  LeaseLostReason,
  OutcomeAckResult,
  type AgentMessage,
  type AssignmentSchema,
  type CoordinatorMessageSchema,
  type Heartbeat,
  type Hello,
  type Draining,
  type WithdrawRefused,
  type LeaseOutcome,
  type LeaseRef,
  type LeaseStatusSchema,
  type Outcomes,
  type Release,
} from '@kairos/proto';

type CoordinatorMessageInit = MessageInitShape<typeof CoordinatorMessageSchema>;
type AssignmentInit = MessageInitShape<typeof AssignmentSchema>;
type ServerCall = grpc.ServerDuplexStream<AgentMessage, CoordinatorMessageInit>;
type LeaseStatusInit = MessageInitShape<typeof LeaseStatusSchema>;
type AgentMessagePayloads = {
  hello: Hello;
  heartbeat: Heartbeat;
  outcomes: Outcomes;
  release: Release;
  draining: Draining;
  withdrawRefused: WithdrawRefused;
};
type AgentMessagePayload<C extends keyof AgentMessagePayloads> = AgentMessagePayloads[C];

/** How the fake answers one lease in a renew reply. */
export type RenewDecision =
  | { readonly kind: 'held'; readonly remainingMs: number; readonly abortRequested?: boolean }
  | { readonly kind: 'lost'; readonly reason: LeaseLostReason }
  | { readonly kind: 'omit' };

/** How the fake answers one outcome. */
export type AckDecision = OutcomeAckResult | 'withhold';

export interface Received {
  /** performance.now() in the test process when the message arrived. */
  readonly at: number;
  readonly message: AgentMessage;
}

export interface AssignmentSpec {
  readonly jobId: string;
  readonly task: string;
  readonly generation?: bigint;
  readonly payload?: JsonObject;
  readonly timeoutMs?: number;
  readonly leaseRemainingMs?: number;
  readonly attempt?: number;
  readonly maxAttempts?: number;
  readonly scheduledFor?: Date;
  /** Trust anchor; default: the newest heartbeat this stream received (as the real coordinator does). */
  readonly anchorSeq?: bigint;
  /** Pre-dispatch: when to start, by the fake's database clock (its wall clock, Date.now()); default 0: at once. */
  readonly startAtMs?: number;
}

export class FakeStream {
  readonly received: Received[] = [];
  /** Sent by the fake: performance.now() and the message. */
  readonly sent: { at: number; message: CoordinatorMessageInit }[] = [];
  /** The agent half-closed its side. */
  agentEnded = false;
  /** The call is over (either side). */
  finished = false;
  /** The agent's address and port: another value means another TCP connection. */
  readonly peer: string;

  constructor(
    readonly index: number,
    private readonly call: ServerCall,
    private readonly fake: FakeCoordinator,
  ) {
    this.peer = call.getPeer();
  }

  get metadata(): grpc.Metadata {
    return this.call.metadata;
  }


  send(message: CoordinatorMessageInit): void {
    if (this.finished) return;
    this.sent.push({ at: performance.now(), message });
    this.call.write(message);
  }

  assign(...specs: AssignmentSpec[]): void {
    const newest = this.heartbeats().reduce((max, h) => (h.seq > max ? h.seq : max), 0n);
    this.send({
      kind: {
        case: 'assignments',
        value: { assignments: specs.map((spec) => this.fake.assignment({ anchorSeq: newest, ...spec })) },
      },
    });
  }

  revoke(leases: { jobId: string; generation?: bigint }[], reason: LeaseLostReason = LeaseLostReason.CANCELLED): void {
    this.send({
      kind: {
        case: 'revoke',
        value: { leases: leases.map((lease) => ({ jobId: lease.jobId, leaseGeneration: lease.generation ?? 1n })), reason },
      },
    });
  }

  drain(graceMs = 5_000): void {
    this.send({ kind: { case: 'drain', value: { graceMs } } });
  }

  /** Asks for pre-dispatched leases back (a cancel, pause or edit of their jobs). */
  withdraw(leases: { jobId: string; generation?: bigint }[]): void {
    this.send({ kind: { case: 'withdraw', value: { leases: leases.map((lease) => ({ jobId: lease.jobId, leaseGeneration: lease.generation ?? 1n })) } } });
  }

  /** Ends the stream with status OK. */
  end(): void {
    if (this.finished) return;
    this.finished = true;
    this.call.end();
  }

  /** Ends the stream with an error status, as a crashing coordinator or proxy would. */
  fail(code: grpc.status = grpc.status.UNAVAILABLE, details = 'stream dropped by the test'): void {
    if (this.finished) return;
    this.finished = true;
    this.call.emit('error', { code, details });
  }

  get hello(): Hello | undefined {
    const first = this.received[0]?.message.kind;
    return first?.case === 'hello' ? first.value : undefined;
  }

  heartbeats(): Heartbeat[] {
    return this.of('heartbeat');
  }

  heartbeatTimes(): number[] {
    return this.received.filter((r) => r.message.kind.case === 'heartbeat').map((r) => r.at);
  }

  outcomes(): LeaseOutcome[] {
    return this.of('outcomes').flatMap((message) => message.outcomes);
  }

  /** Number of Outcomes messages naming the job. */
  outcomeSends(jobId: string): number {
    return this.of('outcomes').filter((message) => message.outcomes.some((o) => o.jobId === jobId)).length;
  }

  /** The job ids of each Outcomes message, in arrival order. */
  outcomeMessages(): string[][] {
    return this.of('outcomes').map((message) => message.outcomes.map((o) => o.jobId));
  }

  releases(): LeaseRef[] {
    return this.of('release').flatMap((message) => message.leases);
  }

  /** Leases the agent refused to withdraw (WithdrawRefused), in order. */
  withdrawRefusals(): LeaseRef[] {
    return this.of('withdrawRefused').flatMap((message) => message.leases);
  }

  /** The reason of each Release message, in order. */
  releaseReasons(): string[] {
    return this.of('release').map((message) => message.reason);
  }

  get drainingReceived(): boolean {
    return this.of('draining').length > 0;
  }

  private of<C extends NonNullable<AgentMessage['kind']['case']>>(kase: C): AgentMessagePayload<C>[] {
    const values: AgentMessagePayload<C>[] = [];
    for (const { message } of this.received) {
      if (message.kind.case === kase) values.push(message.kind.value as AgentMessagePayload<C>);
    }
    return values;
  }

  /** Called by the fake for every agent message. */
  onMessage(message: AgentMessage): void {
    this.received.push({ at: performance.now(), message });
    const kind = message.kind;
    switch (kind.case) {
      case 'hello':
        if (!this.fake.autoWelcome) return;
        this.send({
          kind: {
            case: 'welcome',
            // The fake's database clock is its wall clock, read exactly (no error, nothing held back).
            value: { coordinatorId: this.fake.coordinatorId, leaseMs: this.fake.leaseMs, heartbeatIntervalMs: this.fake.heartbeatIntervalMs, dbTimeMs: this.fake.dbTimeMs() },
          },
        });
        if (kind.value.heldLeases.length > 0) this.renewReply(0n, kind.value.heldLeases);
        return;
      case 'heartbeat':
        if (this.fake.replyToHeartbeats) this.renewReply(kind.value.seq, kind.value.leases);
        return;
      case 'outcomes': {
        const acks = kind.value.outcomes.flatMap((outcome) => {
          const decision = this.fake.ack(outcome, this);
          return decision === 'withhold' ? [] : [{ jobId: outcome.jobId, leaseGeneration: outcome.leaseGeneration, result: decision }];
        });
        if (acks.length > 0) this.send({ kind: { case: 'outcomeAcks', value: { acks } } });
        return;
      }
      default:
        return;
    }
  }

  private renewReply(seq: bigint, leases: LeaseRef[]): void {
    const statuses: LeaseStatusInit[] = [];
    for (const lease of leases) {
      const decision = this.fake.renew(lease, this);
      const ref = { jobId: lease.jobId, leaseGeneration: lease.leaseGeneration };
      if (decision.kind === 'held') {
        statuses.push({
          ...ref,
          state: { case: 'remainingMs', value: decision.remainingMs },
          abortRequested: decision.abortRequested === true,
        });
      }
      else if (decision.kind === 'lost') statuses.push({ ...ref, state: { case: 'lost', value: { reason: decision.reason } } });
    }
    this.send({ kind: { case: 'renewReply', value: { seq, statuses, dbTimeMs: this.fake.dbTimeMs() } } });
  }
}

export interface FakeCoordinatorOptions {
  readonly leaseMs?: number;
  readonly heartbeatIntervalMs?: number;
  readonly coordinatorId?: string;
  /** 0 (default) picks a free port. */
  readonly port?: number;
  /**
   * Welcome and RenewReply carry the database clock (default), as a coordinator
   * that pre-dispatches does; the agent then takes extra clock readings right
   * after Welcome. false: as one that does not (db_time_ms 0), for tests that
   * count heartbeats from the first.
   */
  readonly dbClock?: boolean;
}

export class FakeCoordinator {
  readonly streams: FakeStream[] = [];
  readonly leaseMs: number;
  readonly heartbeatIntervalMs: number;
  readonly coordinatorId: string;
  readonly dbClock: boolean;
  /** Answer Hello with Welcome (and the seq-0 RenewReply for held leases). */
  autoWelcome = true;
  /** Answer heartbeats at all. */
  replyToHeartbeats = true;
  /** End every new Connect call at once with UNAVAILABLE (as a coordinator that is shutting down does). */
  refuseNewStreams = false;
  /** Peers and times of the calls refused that way. */
  readonly refused: { peer: string; at: number }[] = [];
  /** Per-lease renew answer. Default: held for a full lease. */
  renew: (lease: LeaseRef, stream: FakeStream) => RenewDecision;
  /** Per-outcome ack. Default: RECORDED. */
  ack: (outcome: LeaseOutcome, stream: FakeStream) => AckDecision = () => OutcomeAckResult.RECORDED;

  private constructor(
    private readonly server: grpc.Server,
    readonly port: number,
    options: FakeCoordinatorOptions,
  ) {
    this.leaseMs = options.leaseMs ?? 600;
    this.heartbeatIntervalMs = options.heartbeatIntervalMs ?? 200;
    this.coordinatorId = options.coordinatorId ?? `fake-${port}`;
    this.dbClock = options.dbClock ?? true;
    this.renew = () => ({ kind: 'held', remainingMs: this.leaseMs });
  }

  /** db_time_ms for Welcome and RenewReply: the wall clock, read exactly, or 0 (unknown) without `dbClock`. */
  dbTimeMs(): number {
    return this.dbClock ? Date.now() : 0;
  }

  static async start(options: FakeCoordinatorOptions = {}): Promise<FakeCoordinator> {
    const server = new grpc.Server(KAIROS_SERVER_OPTIONS);
    let fake: FakeCoordinator | undefined;
    const pending: ServerCall[] = [];
    addGrpcService(server, AgentService, {
      connect: (call) => {
        if (fake === undefined) pending.push(call);
        else fake.accept(call);
      },
    });
    const port = await new Promise<number>((resolve, reject) => {
      server.bindAsync(`127.0.0.1:${options.port ?? 0}`, grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error === null ? resolve(bound) : reject(error),
      );
    });
    fake = new FakeCoordinator(server, port, options);
    for (const call of pending) fake.accept(call);
    return fake;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** The most recent stream (throws if none yet). */
  get latest(): FakeStream {
    const stream = this.streams[this.streams.length - 1];
    if (stream === undefined) throw new Error('no agent stream yet');
    return stream;
  }

  assignment(spec: AssignmentSpec): AssignmentInit {
    return {
      jobId: spec.jobId,
      runId: `run-${spec.jobId}`,
      task: spec.task,
      payloadJson: JSON.stringify(spec.payload ?? {}),
      attempt: spec.attempt ?? 1,
      maxAttempts: spec.maxAttempts ?? 3,
      leaseGeneration: spec.generation ?? 1n,
      leaseRemainingMs: spec.leaseRemainingMs ?? this.leaseMs,
      timeoutMs: spec.timeoutMs ?? 0,
      scheduledFor: timestampFromDate(spec.scheduledFor ?? new Date()),
      anchorSeq: spec.anchorSeq ?? 0n,
      startAtMs: spec.startAtMs ?? 0,
    };
  }

  /** Every message of every stream, in arrival order per stream. */
  allReceived(): AgentMessage[] {
    return this.streams.flatMap((stream) => stream.received.map((r) => r.message));
  }

  async stop(): Promise<void> {
    for (const stream of this.streams) stream.finished = true;
    this.server.forceShutdown();
  }

  private accept(call: ServerCall): void {
    if (this.refuseNewStreams) {
      this.refused.push({ peer: call.getPeer(), at: performance.now() });
      // emit('error'), not destroy(): grpc-js sends the status only when the stream ends normally.
      call.emit('error', Object.assign(new Error('shutting down'), { code: grpc.status.UNAVAILABLE, details: 'shutting down' }));
      return;
    }
    const stream = new FakeStream(this.streams.length, call, this);
    this.streams.push(stream);
    call.on('data', (message: AgentMessage) => stream.onMessage(message));
    call.on('end', () => {
      // The agent closed its side: a real coordinator finishes the call too.
      stream.agentEnded = true;
      stream.end();
    });
    call.on('cancelled', () => {
      stream.finished = true;
    });
    call.on('error', () => {
      stream.finished = true;
    });
  }
}
