/**
 * AgentService/Connect: one bidi stream per agent (proto/kairos/v1/agent.proto
 * is the contract). This file moves the session's state and turns messages
 * into dispatcher calls; the dispatcher owns claiming and batching, and
 * agent-wire.ts maps and checks the messages.
 *
 * Messages are handled in arrival order per stream (Hello's authentication is
 * awaited before anything after it), except that database work (renew,
 * complete, release) runs concurrently with reading the next message; each
 * reply is sent when its own statement returns.
 *
 * A broken or hostile peer is contained here:
 * - the stream must authenticate with an agent token (metadata
 *   `authorization: Bearer …`) and send Hello within `helloTimeoutMs`;
 * - a stream silent for `silenceLimitMs` (no heartbeat) is closed;
 * - no message may name more leases than MAX_LEASES_PER_MESSAGE allows for the
 *   agent's capacity; a lease reference that is not well formed is answered
 *   on its own and never joins a batch statement (agent-wire.ts);
 * - the token is checked again on every heartbeat (through the cache), so a
 *   revoked token loses its stream within the cache time;
 * - one agent id is one identity: a second stream with the same id and the
 *   same token replaces the first on this coordinator (a reconnect whose old
 *   connection has not died yet); the same id with another token is refused.
 *   Leases are granted to agent id + token in the database, so across
 *   coordinators too no other credential can renew or settle them.
 */
import { status, type ServerDuplexStream } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { undecodableReason, type AgentMessage, type CoordinatorMessage, type Hello, type LeaseOutcome, type OutcomeAck } from '@kairos/proto';
import { StoreUnavailableError, type CompleteResult, type LeaseRef } from '@kairos/store';
import { NO_TRACING, type Tracing } from '@kairos/tracing';
import type { CoordinatorOptions } from '../config';
import { agentOf, createSession, leaseKey, type AgentInfo, type AgentSession, type CoordinatorMessageInit } from '../dispatch/agent-session';
import type { Dispatcher } from '../dispatch/dispatcher';
import type { DbClock } from '../dispatch/db-clock';
import {
  leaseFromWire,
  malformedOutcomeAck,
  malformedRenewStatus,
  outcomeAck,
  outcomeFromWire,
  releaseReasonFromWire,
  renewStatus,
  type CompletionWithoutHolder,
} from './agent-wire';
import { authorize, type Authenticator } from './auth';
import { ApiError } from './errors';
import type { PayloadSchemas } from './payload-schemas';

export const MAX_CAPACITY = 10_000;
const MAX_TASKS = 100;
const MAX_TASK_CHARS = 100;
const MAX_AGENT_ID_CHARS = 200;

/** Most pre-dispatched leases an agent may hold beyond its capacity (Hello.pre_dispatch_queue). */
export const MAX_PREDISPATCH_QUEUE = 10_000;

/** Most leases one Hello, Heartbeat, Outcomes or Release may name: an agent holds at most its capacity and start queue. */
export function maxLeasesPerMessage(capacity: number, queue = 0): number {
  return (capacity + queue) * 2 + 16;
}

export interface AgentStreamDeps {
  dispatcher: Dispatcher;
  options: CoordinatorOptions;
  auth: Authenticator;
  logger: Logger;
  isShuttingDown: () => boolean;
  /** Records the payload schemas agents advertise. */
  payloadSchemas: Pick<PayloadSchemas, 'advertise'>;
  /** Counts the advertised schemas refused. */
  onSchemaRefused: (count: number) => void;
  /** A span per recorded outcome when tracing is on (libs/tracing). */
  tracing?: Tracing;
  /** The database clock as this coordinator estimates it, sent in Welcome and RenewReply for pre-dispatch (dispatch/db-clock.ts). */
  dbClock?: Pick<DbClock, 'nowMs' | 'errorMs'>;
}

type Call = ServerDuplexStream<AgentMessage, CoordinatorMessage | CoordinatorMessageInit>;

export function connectHandler(deps: AgentStreamDeps) {
  const { dispatcher, options } = deps;
  const heartbeatIntervalMs = options.heartbeatIntervalMs;
  const tracing = deps.tracing ?? NO_TRACING;
  /**
   * Welcome's and RenewReply's db_time_ms, db_time_error_ms and held_ms (unset: unknown). `receivedAt`:
   * when the message answered arrived (monotonic), so the agent can take our processing out of its round trip.
   */
  const dbTime = (receivedAt: number) => {
    const error = deps.dbClock?.errorMs() ?? Number.POSITIVE_INFINITY;
    if (!Number.isFinite(error)) return {};
    const dbTimeMs = deps.dbClock!.nowMs();
    return { dbTimeMs, dbTimeErrorMs: error, heldMs: Math.max(0, performance.now() - receivedAt) };
  };

  return (call: Call) => {
    const session = createSession(call);
    let logger = deps.logger.child({ session: session.sessionId });
    const authorizationValue = call.metadata.get('authorization')[0];
    const authorization = typeof authorizationValue === 'string' ? authorizationValue : undefined;
    let queue: Promise<void> = Promise.resolve();

    const helloTimer = setTimeout(
      () => fail(status.DEADLINE_EXCEEDED, `no Hello within ${options.agentHelloTimeoutMs} ms`),
      options.agentHelloTimeoutMs,
    );
    const silenceTimer = setInterval(() => {
      const silentMs = performance.now() - session.lastSeenMs;
      if (silentMs > options.agentSilenceLimitMs) {
        fail(status.UNAVAILABLE, `no message for ${Math.round(silentMs)} ms (limit ${options.agentSilenceLimitMs} ms): closing the stream`);
      }
    }, Math.max(50, Math.min(heartbeatIntervalMs, options.agentSilenceLimitMs)));
    helloTimer.unref();
    silenceTimer.unref();

    const fail = (code: status, details: string) => {
      if (session.state.kind === 'closed') return;
      logger.warn({ code, details }, 'closing agent stream');
      close();
      // emit('error') ends the call with this status; destroy() would drop the stream
      // without ever sending one, and the agent would wait for it.
      call.emit('error', Object.assign(new Error(details), { code, details }));
    };
    session.terminate = fail;
    const close = () => {
      clearTimeout(helloTimer);
      clearInterval(silenceTimer);
      if (session.state.kind === 'closed') return;
      session.state = { kind: 'closed' };
      dispatcher.removeSession(session);
      logger.info({ held: session.held.size }, 'agent stream closed');
    };
    const report = (what: string) => (error: unknown) => {
      // Database trouble: no reply. The agent's trust window and retries cover it.
      logger.warn({ err: error }, `${what} failed`);
    };
    /** A message naming more leases than the agent can hold is a broken peer: the stream ends. */
    const tooMany = (field: string, count: number, agent: AgentInfo): boolean => {
      const limit = maxLeasesPerMessage(agent.capacity, agent.preDispatchQueue);
      if (count <= limit) return false;
      fail(status.INVALID_ARGUMENT, `${field} names ${count} leases; at most ${limit} for capacity ${agent.capacity} and start queue ${agent.preDispatchQueue}`);
      return true;
    };

    async function onHello(hello: Hello, helloAt: number): Promise<void> {
      if (deps.isShuttingDown()) {
        // A new stream to a coordinator that is draining would only be told to
        // move on again. Refusing it makes the agent back off and dial a new
        // connection, which reaches another coordinator (chaos finding 3).
        return fail(status.UNAVAILABLE, 'coordinator is shutting down: connect to another one');
      }
      let agent: AgentInfo;
      try {
        const principal = await deps.auth.authenticate(authorization);
        authorize(principal, 'agent');
        agent = {
          agentId: hello.agentId,
          namespace: principal.namespace,
          tokenId: principal.tokenId,
          tasks: [...new Set(hello.tasks.filter((task) => task.length > 0))],
          capacity: hello.capacity,
          version: hello.version.slice(0, 100),
          preDispatch: hello.preDispatch,
          preDispatchQueue: hello.preDispatch ? hello.preDispatchQueue : 0,
          slotsFreeOnOutcome: hello.slotsFreeOnOutcome,
        };
      } catch (error: unknown) {
        return fail(...refusal(error));
      }
      // Authenticated first: a peer without a valid token learns nothing about what a Hello must hold.
      const invalid = checkHello(hello);
      if (invalid) return fail(status.INVALID_ARGUMENT, invalid);
      if (session.state.kind === 'closed') return;
      const existing = dispatcher.sessions().find((other) => other !== session && agentOf(other)?.agentId === agent.agentId);
      if (existing) {
        if (agentOf(existing)!.tokenId !== agent.tokenId) {
          return fail(status.PERMISSION_DENIED, `agent id ${agent.agentId} is connected here with another token`);
        }
        existing.terminate?.(status.ABORTED, 'replaced by a newer stream of the same agent');
      }
      clearTimeout(helloTimer);
      logger = logger.child({ agentId: agent.agentId, namespace: agent.namespace });
      session.state = { kind: 'active', agent };
      session.send({
        kind: {
          case: 'welcome',
          value: { coordinatorId: options.coordinatorId, leaseMs: options.leaseMs, heartbeatIntervalMs, ...dbTime(helloAt) },
        },
      });
      const held = wellFormed(hello.heldLeases.map(leaseFromWire));
      // Count announced leases as held before the renewal answers, so the
      // dispatcher never assigns into slots the agent is still using.
      const seenAtMs = performance.now();
      for (const lease of held) session.held.set(leaseKey(lease.jobId, lease.leaseGeneration), { ...lease, seenAtMs, named: true });
      logger.info({ tasks: agent.tasks, capacity: agent.capacity, held: held.length }, 'agent connected');
      if (held.length > 0) {
        try {
          const results = await dispatcher.renew(session, held, { complete: false, intervalMs: heartbeatIntervalMs });
          session.send({ kind: { case: 'renewReply', value: { seq: 0n, statuses: results.map(renewStatus), ...dbTime(performance.now()) } } });
        } catch (error: unknown) {
          report('renewal of announced leases')(error);
        }
      }
      if (hello.payloadSchemas.length > 0) {
        // Before the agent gets work, so a job created once it is connected is checked. A database
        // failure here costs the checks, never the connection.
        try {
          const refused = await deps.payloadSchemas.advertise(agent.namespace, agent.agentId, agent.tasks, hello.payloadSchemas);
          if (refused.length > 0) deps.onSchemaRefused(refused.length);
        } catch (error: unknown) {
          report('recording payload schemas')(error);
        }
      }
      // The stream may have ended while the renewal ran: a closed session is never added.
      if (!isClosed(session)) dispatcher.addSession(session);
    }

    /** `arrivedAt`: when the message came off the stream (monotonic), for RenewReply.held_ms. */
    function handle(message: AgentMessage, arrivedAt: number): Promise<void> | void {
      const kind = message.kind;
      if (session.state.kind === 'closed') return;
      const undecodable = undecodableReason(message);
      if (undecodable !== undefined) return fail(status.INVALID_ARGUMENT, `a message could not be decoded: ${undecodable}`);
      if (session.state.kind === 'awaiting-hello') {
        if (kind.case !== 'hello') return fail(status.INVALID_ARGUMENT, 'the first message must be Hello');
        return onHello(kind.value, arrivedAt);
      }
      const agent = session.state.agent;
      switch (kind.case) {
        case 'hello':
          return fail(status.INVALID_ARGUMENT, 'Hello was already received on this stream');
        case 'heartbeat': {
          if (tooMany('heartbeat.leases', kind.value.leases.length, agent)) return;
          recheckToken();
          const seq = kind.value.seq;
          const receivedAt = arrivedAt;
          if (seq > session.lastHeartbeatSeq) session.lastHeartbeatSeq = seq;
          session.heartbeats += 1;
          const leases = kind.value.leases.map(leaseFromWire);
          const refused = leases.flatMap((lease) => (lease.kind === 'malformed' ? [malformedRenewStatus(lease)] : []));
          dispatcher
            .renew(session, wellFormed(leases), { complete: true, intervalMs: heartbeatIntervalMs, heartbeat: session.heartbeats })
            .then((results) =>
              session.send({ kind: { case: 'renewReply', value: { seq, statuses: [...results.map(renewStatus), ...refused], ...dbTime(receivedAt) } } }),
            )
            .catch(report('heartbeat renewal'));
          return;
        }
        case 'outcomes': {
          if (tooMany('outcomes.outcomes', kind.value.outcomes.length, agent)) return;
          // One pass (an agent sends up to 256 outcomes a message, one per finished run).
          const reports: CompletionWithoutHolder[] = [];
          const refused: OutcomeAck[] = [];
          for (const wire of kind.value.outcomes) {
            const outcome = outcomeFromWire(wire);
            if (outcome.kind === 'ok') reports.push(outcome.report);
            else refused.push(malformedOutcomeAck(outcome));
          }
          const spans = tracing.enabled ? reportSpans(tracing, kind.value.outcomes, agent.agentId) : undefined;
          dispatcher
            .complete(session, reports)
            .then((results) => {
              spans?.end(results);
              const acks = results.map(outcomeAck);
              for (const ack of refused) acks.push(ack);
              session.send({ kind: { case: 'outcomeAcks', value: { acks } } });
            })
            .catch((error: unknown) => {
              spans?.end([]);
              report('recording outcomes')(error);
            });
          return;
        }
        case 'release':
          if (tooMany('release.leases', kind.value.leases.length, agent)) return;
          dispatcher
            .release(session, wellFormed(kind.value.leases.map(leaseFromWire)), releaseReasonFromWire(kind.value.reason))
            .catch(report('release'));
          return;
        case 'withdrawRefused':
          if (tooMany('withdraw_refused.leases', kind.value.leases.length, agent)) return;
          dispatcher.refuseWithdraw(session, wellFormed(kind.value.leases.map(leaseFromWire))).catch(report('withdraw refusal'));
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
    }

    /** A token revoked (or expired) since the stream opened ends it, within the authentication cache time. */
    function recheckToken(): void {
      deps.auth.authenticate(authorization).catch((error: unknown) => {
        if (error instanceof ApiError && error.kind === 'unauthenticated') fail(status.UNAUTHENTICATED, error.message);
      });
    }

    call.on('data', (message: AgentMessage) => {
      const arrivedAt = performance.now();
      session.lastSeenMs = arrivedAt;
      queue = queue.then(() => handle(message, arrivedAt)).catch(report('handling an agent message'));
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

/** What is wrong with a Hello, naming the field; undefined when nothing is. */
function checkHello(hello: Hello): string | undefined {
  if (hello.agentId.length === 0 || hello.agentId.length > MAX_AGENT_ID_CHARS) {
    return `hello.agent_id must be 1..${MAX_AGENT_ID_CHARS} characters`;
  }
  if (hello.capacity < 1 || hello.capacity > MAX_CAPACITY) return `hello.capacity must be 1..${MAX_CAPACITY}`;
  if (hello.preDispatchQueue > MAX_PREDISPATCH_QUEUE) return `hello.pre_dispatch_queue must be 0..${MAX_PREDISPATCH_QUEUE}`;
  if (hello.tasks.length > MAX_TASKS) return `hello.tasks must name at most ${MAX_TASKS} tasks`;
  if (hello.tasks.some((task) => task.length > MAX_TASK_CHARS)) {
    return `hello.tasks entries must be at most ${MAX_TASK_CHARS} characters`;
  }
  const limit = maxLeasesPerMessage(hello.capacity, hello.preDispatch ? hello.preDispatchQueue : 0);
  if (hello.heldLeases.length > limit) {
    return `hello.held_leases names ${hello.heldLeases.length} leases; at most ${limit} for capacity ${hello.capacity}`;
  }
  return undefined;
}

/** A function, so that a check after an await is not narrowed away by the compiler. */
function isClosed(session: AgentSession): boolean {
  return session.state.kind === 'closed';
}

function wellFormed(leases: ReturnType<typeof leaseFromWire>[]): LeaseRef[] {
  return leases.flatMap((lease) => (lease.kind === 'ok' ? [lease.ref] : []));
}

/** The status a failed authentication or authorization ends the stream with. */
function refusal(error: unknown): [status, string] {
  if (error instanceof ApiError && error.kind === 'unauthenticated') return [status.UNAUTHENTICATED, error.message];
  if (error instanceof ApiError && error.kind === 'permission_denied') return [status.PERMISSION_DENIED, error.message];
  if (error instanceof StoreUnavailableError) return [status.UNAVAILABLE, 'the schedule store is unavailable; retry later'];
  return [status.INTERNAL, 'could not authenticate the stream'];
}

function assertNever(value: never): never {
  throw new Error(`unexpected agent message ${JSON.stringify(value)}`);
}

/** A span per reported outcome (child of the agent's run span), ended with what the fence made of it. */
function reportSpans(tracing: Tracing, outcomes: readonly LeaseOutcome[], agentId: string) {
  const spans = new Map(
    outcomes.map((outcome) => [
      leaseKey(outcome.jobId, outcome.leaseGeneration),
      tracing.startSpan('kairos.job.report', {
        parent: outcome.traceparent === '' ? null : outcome.traceparent,
        attributes: { 'kairos.job.id': outcome.jobId, 'kairos.lease.generation': Number(outcome.leaseGeneration), 'kairos.agent.id': agentId },
      }),
    ]),
  );
  return {
    end(results: readonly CompleteResult[]) {
      for (const result of results) {
        const key = leaseKey(result.jobId, result.leaseGeneration);
        spans.get(key)?.setAttributes({ 'kairos.report.result': result.kind, ...('runOutcome' in result ? { 'kairos.run.outcome': result.runOutcome } : {}) });
        spans.get(key)?.end(result.kind === 'recorded' ? {} : { error: `outcome ${result.kind}` });
        spans.delete(key);
      }
      for (const span of spans.values()) span.end({ error: 'not recorded' });
    },
  };
}
