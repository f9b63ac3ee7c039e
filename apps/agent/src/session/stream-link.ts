/**
 * One AgentService/Connect call, as the session uses it: opened with Hello,
 * written to only while writable, and remembering when each heartbeat was
 * sent so the matching RenewReply can be anchored at that time.
 *
 * Owned by the session (session.ts); all times are the session thread's
 * monotonic clock.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import type { AgentService, CoordinatorMessage, GrpcClient, HelloSchema, LeaseRef, ServiceMethods } from '@kairos/proto';
import type { AgentMessageInit } from './wire';

export type AgentClient = GrpcClient<ServiceMethods<typeof AgentService>>;
type ConnectCall = grpc.ClientDuplexStream<AgentMessageInit, CoordinatorMessage>;

/** Unanswered heartbeat send times kept per stream (older ones can no longer anchor anything useful). */
const MAX_UNANSWERED_HEARTBEATS = 64;

export interface StreamLinkHandlers {
  onMessage(link: StreamLink, message: CoordinatorMessage): void;
  /** The call is over; `reason` is its status, e.g. "UNAVAILABLE: connection refused". */
  onEnded(link: StreamLink, reason: string): void;
  onWriteError(link: StreamLink, error: unknown): void;
}

export class StreamLink {
  /** Monotonic time Hello was written: anchors the seq-0 RenewReply. */
  readonly helloSentAt: number;
  /** Resolves when the call's final status has arrived. */
  readonly settled: Promise<void>;
  private open = true;
  private statusArrived = false;
  private nextSeq = 1n;
  /** Send time of each unanswered heartbeat; written by `heartbeat`, pruned by `answered`. */
  private readonly sentAt = new Map<bigint, number>();

  private constructor(
    /** The how-manieth stream of the session, for logs. */
    readonly serial: number,
    /** The channel the call runs on (the session closes it when no call uses it). */
    readonly client: AgentClient,
    private readonly call: ConnectCall,
    private readonly handlers: StreamLinkHandlers,
    now: number,
    hello: MessageInitShape<typeof HelloSchema>,
  ) {
    this.helloSentAt = now;
    this.settled = new Promise<void>((resolve) => {
      call.on('status', (status: grpc.StatusObject) => {
        this.open = false;
        this.statusArrived = true;
        resolve();
        handlers.onEnded(this, `${grpc.status[status.code] ?? status.code}: ${status.details}`);
      });
    });
    call.on('data', (message: CoordinatorMessage) => handlers.onMessage(this, message));
    // A non-OK status is also emitted as 'error' (before 'status'); the status handler does the work.
    call.on('error', () => {});
    this.write({ kind: { case: 'hello', value: hello } });
  }

  /** Opens a Connect call and writes Hello as its first message. */
  static open(
    client: AgentClient,
    options: { serial: number; token: string | undefined; now: number; hello: MessageInitShape<typeof HelloSchema> },
    handlers: StreamLinkHandlers,
  ): StreamLink {
    const metadata = new grpc.Metadata();
    if (options.token !== undefined) metadata.set('authorization', `Bearer ${options.token}`);
    return new StreamLink(options.serial, client, client.connect(metadata), handlers, options.now, options.hello);
  }

  /** True once the call's final status has arrived: nothing more will come from it. */
  get ended(): boolean {
    return this.statusArrived;
  }

  /** False once we ended or cancelled the call, or its status arrived. */
  get writable(): boolean {
    return this.open;
  }

  write(message: AgentMessageInit): boolean {
    if (!this.open) return false;
    try {
      this.call.write(message);
      return true;
    } catch (error: unknown) {
      this.handlers.onWriteError(this, error);
      return false;
    }
  }

  /** Writes the next heartbeat (seq 1, 2, … on this stream) and remembers when. */
  heartbeat(leases: LeaseRef[] | { jobId: string; leaseGeneration: bigint }[], now: number): bigint {
    const seq = this.nextSeq;
    this.nextSeq += 1n;
    this.sentAt.set(seq, now);
    if (this.sentAt.size > MAX_UNANSWERED_HEARTBEATS) {
      const oldest = this.sentAt.keys().next();
      if (oldest.done !== true) this.sentAt.delete(oldest.value);
    }
    this.write({ kind: { case: 'heartbeat', value: { seq, leases } } });
    return seq;
  }

  /** When the heartbeat `seq` (0 = Hello) was sent; undefined if unknown or pruned. */
  sendTimeOf(seq: bigint): number | undefined {
    return seq === 0n ? this.helloSentAt : this.sentAt.get(seq);
  }

  /**
   * A RenewReply for `seq` arrived. Send times are kept anyway (bounded by
   * MAX_UNANSWERED_HEARTBEATS): an assignment may name an answered heartbeat as
   * its trust anchor, and an older reply cannot extend trust (the lease keeper
   * ignores renewals anchored before the one it applied).
   */
  answered(_seq: bigint): void {
    // nothing to forget
  }

  /** Half-closes: "no more messages from the agent"; the coordinator then ends the call. */
  end(): void {
    if (!this.open) return;
    this.open = false;
    this.call.end();
  }

  /** Abandons the call at once. */
  cancel(): void {
    this.open = false;
    this.call.cancel();
  }
}
