/**
 * AgentService/Connect: one bidi stream per agent (proto/kairos/v1/agent.proto
 * is the contract). This file moves the session's state and turns messages
 * into dispatcher calls; the dispatcher owns claiming and batching.
 *
 * Messages are handled in arrival order per stream, except that database work
 * (renew, complete, release) runs concurrently with reading the next message;
 * each reply is sent when its own statement returns.
 */
import { status, type ServerDuplexStream } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { type AgentMessage, type CoordinatorMessage, type LeaseRef as WireLeaseRef } from '@kairos/proto';
import type { LeaseRef } from '@kairos/store';
import type { CoordinatorOptions } from '../config';
import { createSession, leaseKey, type AgentSession, type CoordinatorMessageInit } from '../dispatch/agent-session';
import { outcomeAck, renewStatus, type Dispatcher } from '../dispatch/dispatcher';

const MAX_CAPACITY = 10_000;

export function connectHandler(deps: { dispatcher: Dispatcher; options: CoordinatorOptions; logger: Logger; isShuttingDown: () => boolean }) {
  const { dispatcher, options } = deps;
  const heartbeatIntervalMs = options.heartbeatIntervalMs;

  return (call: ServerDuplexStream<AgentMessage, CoordinatorMessage | CoordinatorMessageInit>) => {
    const session = createSession(call);
    let logger = deps.logger.child({ session: session.sessionId });

    const fail = (code: status, details: string) => {
      logger.warn({ code, details }, 'closing agent stream');
      close();
      // emit('error') ends the call with this status; destroy() would drop the stream
      // without ever sending one, and the agent would wait for it.
      call.emit('error', Object.assign(new Error(details), { code, details }));
    };
    const close = () => {
      if (session.state.kind === 'closed') return;
      session.state = { kind: 'closed' };
      dispatcher.removeSession(session);
      logger.info({ held: session.held.size }, 'agent stream closed');
    };
    const report = (what: string) => (error: unknown) => {
      // Database trouble: no reply. The agent's trust window and retries cover it.
      logger.warn({ err: error }, `${what} failed`);
    };

    call.on('data', (message: AgentMessage) => {
      const kind = message.kind;
      session.lastSeenMs = performance.now();
      if (session.state.kind === 'closed') return;
      if (session.state.kind === 'awaiting-hello') {
        if (kind.case !== 'hello') return fail(status.INVALID_ARGUMENT, 'the first message must be Hello');
        const hello = kind.value;
        const tasks = [...new Set(hello.tasks.filter((t) => t.length > 0))];
        if (hello.agentId.length === 0 || hello.agentId.length > 200) {
          return fail(status.INVALID_ARGUMENT, 'hello.agent_id must be 1..200 characters');
        }
        if (hello.capacity < 1 || hello.capacity > MAX_CAPACITY) {
          return fail(status.INVALID_ARGUMENT, `hello.capacity must be 1..${MAX_CAPACITY}`);
        }
        if (deps.isShuttingDown()) {
          // A new stream to a coordinator that is draining would only be told to
          // move on again. Refusing it makes the agent back off and dial a new
          // connection, which reaches another coordinator (chaos finding 3).
          return fail(status.UNAVAILABLE, 'coordinator is shutting down: connect to another one');
        }
        const agent = { agentId: hello.agentId, tasks, capacity: hello.capacity, version: hello.version };
        logger = logger.child({ agentId: agent.agentId });
        session.state = { kind: 'active', agent };
        session.send({
          kind: {
            case: 'welcome',
            value: { coordinatorId: options.coordinatorId, leaseMs: options.leaseMs, heartbeatIntervalMs },
          },
        });
        const held = hello.heldLeases.map(fromWire);
        // Count announced leases as held before the renewal answers, so the
        // dispatcher never assigns into slots the agent is still using.
        const seenAtMs = performance.now();
        for (const lease of held) session.held.set(leaseKey(lease.jobId, lease.leaseGeneration), { ...lease, seenAtMs });
        logger.info({ tasks, capacity: agent.capacity, held: held.length }, 'agent connected');
        if (held.length > 0) {
          dispatcher
            .renew(session, held, { complete: false, intervalMs: heartbeatIntervalMs })
            .then((results) => {
              session.send({ kind: { case: 'renewReply', value: { seq: 0n, statuses: results.map(renewStatus) } } });
              dispatcher.addSession(session);
            })
            .catch((error: unknown) => {
              report('renewal of announced leases')(error);
              dispatcher.addSession(session);
            });
        } else {
          dispatcher.addSession(session);
        }
        return;
      }
      switch (kind.case) {
        case 'hello':
          return fail(status.INVALID_ARGUMENT, 'Hello was already received on this stream');
        case 'heartbeat': {
          const seq = kind.value.seq;
          if (seq > session.lastHeartbeatSeq) session.lastHeartbeatSeq = seq;
          dispatcher
            .renew(session, kind.value.leases.map(fromWire), { complete: true, intervalMs: heartbeatIntervalMs })
            .then((results) => session.send({ kind: { case: 'renewReply', value: { seq, statuses: results.map(renewStatus) } } }))
            .catch(report('heartbeat renewal'));
          return;
        }
        case 'outcomes':
          dispatcher
            .complete(session, kind.value.outcomes)
            .then((results) => session.send({ kind: { case: 'outcomeAcks', value: { acks: results.map(outcomeAck) } } }))
            .catch(report('recording outcomes'));
          return;
        case 'release':
          dispatcher.release(session, kind.value.leases.map(fromWire)).catch(report('release'));
          return;
        case 'draining':
          if (session.state.kind === 'active') {
            session.state = { kind: 'draining', agent: session.state.agent, by: 'agent' };
            logger.info('agent is draining: no new assignments');
          }
          return;
        case undefined:
          return;
        default:
          return assertNever(kind);
      }
    });
    call.on('end', () => {
      close();
      session.end();
    });
    call.on('error', () => close());
    call.on('cancelled', () => close());
    call.on('close', () => close());
  };
}

function fromWire(lease: WireLeaseRef): LeaseRef {
  return { jobId: lease.jobId, leaseGeneration: Number(lease.leaseGeneration) };
}

function assertNever(value: never): never {
  throw new Error(`unexpected agent message ${JSON.stringify(value)}`);
}

/** Tells every agent of this coordinator to move elsewhere (shutdown). */
export function drainSessions(sessions: readonly AgentSession[], graceMs: number): void {
  for (const session of sessions) {
    if (session.state.kind === 'active') {
      session.state = { kind: 'draining', agent: session.state.agent, by: 'coordinator' };
    }
    session.send({ kind: { case: 'drain', value: { graceMs } } });
  }
}
