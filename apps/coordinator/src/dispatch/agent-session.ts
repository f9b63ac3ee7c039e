/**
 * One connected agent's Connect stream, as this coordinator sees it.
 *
 * Authority: the database holds every lease. `held` is this coordinator's
 * belief of what the agent holds, used only for slot accounting (never claim
 * more than the agent can start) and for routing revokes; it is corrected by
 * every heartbeat's renew result. Losing it (coordinator restart) loses
 * nothing: the agent re-announces its leases in Hello.
 *
 * Who writes what: the gRPC handler (api/grpc-agent.ts) moves `state`; the
 * dispatcher adds to `held` when it assigns and removes on outcome, release,
 * lost renewal or reap.
 */
import { create } from '@bufbuild/protobuf';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import { CoordinatorMessageSchema, type AgentMessage, type CoordinatorMessage } from '@kairos/proto';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { LeaseRef } from '@kairos/store';

export interface AgentInfo {
  agentId: string;
  /** The namespace of the agent's token: it is served only jobs of this namespace. */
  namespace: string;
  /** The agent's token (null on an --insecure coordinator): leases are granted to agent id + token. */
  tokenId: string | null;
  tasks: readonly string[];
  capacity: number;
  version: string;
  /** The agent announced Hello.pre_dispatch: it may be handed jobs ahead of their due instant. */
  preDispatch: boolean;
  /** Hello.pre_dispatch_queue (0 without pre_dispatch): pre-dispatched leases it holds beyond its capacity. */
  preDispatchQueue: number;
  /** Hello.slots_free_on_outcome: a lease whose Outcome has arrived no longer takes a slot (see AgentSession.reported). */
  slotsFreeOnOutcome: boolean;
}

/**
 * - `awaiting-hello`: the stream is open; the first message must be Hello.
 * - `active`: Welcome sent; the dispatcher may assign up to the free slots.
 * - `draining`: no new assignments. `by: 'agent'` after the agent's Draining
 *   (SIGTERM), `by: 'coordinator'` after we sent Drain (we are shutting down);
 *   heartbeats, outcomes and releases are still served.
 * - `closed`: the stream ended; the session is forgotten. Its leases stay in
 *   the database, to be renewed over the agent's next stream or to expire.
 */
export type SessionState =
  | { kind: 'awaiting-hello' }
  | { kind: 'active'; agent: AgentInfo }
  | { kind: 'draining'; agent: AgentInfo; by: 'agent' | 'coordinator' }
  | { kind: 'closed' };

export interface HeldLease extends LeaseRef {
  seenAtMs: number;
  /** The agent has named it (announced in Hello, or renewed by a heartbeat) at least once. */
  named: boolean;
  /**
   * Claimed leases: how many heartbeats the session had received when the
   * lease was assigned. The agent may have built the next one before the
   * assignment reached it (and sent it late: a pause, a slow link), so only the
   * second heartbeat received after the assignment can say the agent never
   * named it. Counted here, not taken from the agent's seq, which the agent
   * controls.
   */
  assignedAtHeartbeat?: number;
}

export type CoordinatorMessageInit = MessageInitShape<typeof CoordinatorMessageSchema>;

export interface AgentSession {
  readonly sessionId: number;
  state: SessionState;
  readonly connectedAt: Date;
  lastHeartbeatAt: Date | null;
  /** Heartbeats received on this session (see HeldLease.assignedAtHeartbeat). */
  heartbeats: number;
  /**
   * Monotonic time of the last message from the agent. An agent silent for two
   * heartbeat intervals (paused, hung, cut off) gets no new work: anything
   * assigned to it would only wait for its lease to expire.
   */
  lastSeenMs: number;
  /** Seq of the newest Heartbeat received on this stream (0: Hello); assignments carry it as their trust anchor. */
  lastHeartbeatSeq: bigint;
  /**
   * Leases the agent holds, by leaseKey, with the monotonic time we last had
   * evidence of it (assigned, announced or renewed). Heartbeats list every
   * lease the agent holds, so an entry missing from heartbeats for two
   * intervals is dropped: a lost race between an ack and a renewal cannot
   * leave a phantom lease occupying a slot.
   */
  readonly held: Map<string, HeldLease>;
  /**
   * Held leases assigned ahead of their start, by leaseKey, with their start
   * on this process's monotonic clock: until then they do not keep the
   * agent's slots busy (see `busySlots`). Pruned as starts pass.
   */
  readonly ahead: Map<string, number>;
  /**
   * Held leases whose Outcome has arrived and is being recorded, by leaseKey,
   * for an agent that announced Hello.slots_free_on_outcome: their handlers
   * have ended, so they no longer take a slot (`slotsTaken`), and the next
   * claim need not wait for the completion's write. Only held leases are
   * added; `forgetLease` removes them with the lease.
   */
  readonly reported: Set<string>;
  /** Renewals of this session submitted and not yet applied (see `forgetLease`). */
  renewing: number;
  /**
   * Leases forgotten (ended, given back, revoked) while a renewal was in
   * flight: that renewal may have read them still held, and its result must
   * not bring them back. Cleared when no renewal is in flight.
   */
  readonly forgottenWhileRenewing: Set<string>;
  send(message: CoordinatorMessageInit): void;
  end(): void;
  /** Ends the stream with a status (set by api/grpc-agent.ts): used when a newer stream of the same agent replaces it. */
  terminate?: (code: number, details: string) => void;
}

let nextSessionId = 1;

/** How a session reaches its agent: a stream's write and end, or a test's. `send` is called as the session's method. */
export interface SessionIo {
  send(this: AgentSession, message: CoordinatorMessageInit): void;
  end(): void;
}

/** A fresh session in `state`, nothing held, writing through `io`. */
export function newSession(state: SessionState, io: SessionIo): AgentSession {
  return {
    sessionId: nextSessionId++,
    state,
    connectedAt: new Date(),
    lastHeartbeatAt: null,
    heartbeats: 0,
    lastSeenMs: performance.now(),
    lastHeartbeatSeq: 0n,
    held: new Map(),
    ahead: new Map(),
    reported: new Set(),
    renewing: 0,
    forgottenWhileRenewing: new Set(),
    send: io.send,
    end: io.end,
  };
}

export function createSession(call: ServerDuplexStream<AgentMessage, CoordinatorMessage | CoordinatorMessageInit>): AgentSession {
  return newSession(
    { kind: 'awaiting-hello' },
    {
      send(message) {
        if (this.state.kind === 'closed') return;
        try {
          call.write(create(CoordinatorMessageSchema, message));
        } catch {
          // The stream is going away; its end/error handler closes the session.
        }
      },
      end() {
        try {
          call.end();
        } catch {
          // already ended
        }
      },
    },
  );
}

export function agentOf(session: AgentSession): AgentInfo | undefined {
  return session.state.kind === 'active' || session.state.kind === 'draining' ? session.state.agent : undefined;
}

/**
 * Tells agents of this coordinator to move to another one (shutdown, or a
 * rebalance): no more assignments here; the agent opens a new stream, moves
 * its leases' heartbeats and outcomes over, then closes this one.
 */
export function drainSessions(sessions: readonly AgentSession[], graceMs: number): void {
  for (const session of sessions) {
    if (session.state.kind === 'active') {
      session.state = { kind: 'draining', agent: session.state.agent, by: 'coordinator' };
    }
    session.send({ kind: { case: 'drain', value: { graceMs } } });
  }
}

export function freeSlots(session: AgentSession): number {
  return session.state.kind === 'active' ? Math.max(0, session.state.agent.capacity - slotsTaken(session)) : 0;
}

/**
 * Held leases that take one of the agent's slots: all of them, less those
 * whose Outcome has arrived (`reported`, a subset of `held`: every lease
 * leaves both through `forgetLease`).
 */
export function slotsTaken(session: AgentSession): number {
  return session.held.size - session.reported.size;
}

/**
 * Slots of the agent busy now or due to be: the leases that take a slot
 * (`slotsTaken`), less those assigned ahead whose start has not come. Prunes
 * `ahead` of passed starts and of leases no longer held.
 */
export function busySlots(session: AgentSession, now: number = performance.now()): number {
  let waiting = 0;
  for (const [key, startAt] of session.ahead) {
    if (startAt <= now || !session.held.has(key)) session.ahead.delete(key);
    else if (!session.reported.has(key)) waiting++;
  }
  return slotsTaken(session) - waiting;
}

/**
 * Forgets a held lease (its outcome recorded, given back, revoked, lost, no
 * longer named): it no longer takes a slot, and a renewal in flight cannot
 * bring it back. True if it was held. The only way a lease leaves `held`.
 */
export function forgetLease(session: AgentSession, key: string): boolean {
  session.reported.delete(key);
  if (session.renewing > 0) session.forgottenWhileRenewing.add(key);
  return session.held.delete(key);
}

export function leaseKey(jobId: string, generation: number | bigint): string {
  return `${jobId.toLowerCase()}#${generation}`;
}
