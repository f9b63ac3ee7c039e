/**
 * The dispatcher: slot accounting and the claim loop, plus the batched paths
 * for renewals, outcomes and releases.
 *
 * Claiming: a coordinator claims only what its connected agents can start —
 * per agent, at most its free slots, only its tasks — now, or (pre-dispatch,
 * docs/decisions/0021) at a due instant within the agent's look-ahead; those
 * wait in the agent, never here, and a cancel asks the agent for them back
 * (`withdraw`). Agents are served least-loaded first. A claim round runs when something may have become
 * claimable: a timer set at the earliest next_run_at (computed by the database
 * as a duration), a NOTIFY from any coordinator (jobs created, retried,
 * released, triggered, resumed), slots freed by an outcome or a new agent, and
 * a jittered poll as a backstop. Rounds are single-flight: a wake during a
 * round schedules one more round, never a second concurrent one.
 *
 * Renewals, outcomes and releases from every agent go through group commit
 * (group-commit.ts): one statement per flush, whatever the number of agents.
 * Each lease in them carries its holder (the session's agent id and token),
 * and the store matches it against the lease's recorded holder: an agent
 * naming another agent's lease changes nothing, and is counted
 * (kairos_foreign_lease_refusals_total).
 *
 * An agent that is assigned leases and never names them in its heartbeats is
 * quarantined (agent-standing.ts): no work for a while, then one lease at a
 * time until it reports an outcome.
 *
 * The dispatcher speaks store types only; api/agent-wire.ts maps the wire.
 *
 * Invariants:
 * - `held` of a session only grows by what this dispatcher claimed for it (or
 *   what a renewal of its announced leases confirmed), so free slots are never
 *   overstated by our own doing.
 * - A claim made for a session that closed before the assignment could be sent
 *   is released at once (no attempt spent), not left to expire.
 */
import type { Logger } from 'pino';
import { LeaseLostReason } from '@kairos/proto';
import { StoreUnavailableError } from '@kairos/store';
import { NO_TRACING, type Tracing } from '@kairos/tracing';
import type {
  ClaimedJob,
  CompleteResult,
  CompletionReport,
  HeldLeaseRef,
  LeaseRef,
  ReleasedLease,
  ReleaseResult,
  RenewResult,
  Store,
} from '@kairos/store';
import { toAssignment, toWireLease, type CompletionWithoutHolder } from '../api/agent-wire';
import type { CoordinatorOptions } from '../config';
import type { AgentView } from '../api/views';
import type { Metrics } from '../metrics';
import { agentOf, busySlots, forgetLease, freeSlots, leaseKey, slotsTaken, type AgentInfo, type AgentSession, type HeldLease } from './agent-session';
import { createAgentStandings } from './agent-standing';
import type { DbClock } from './db-clock';
import { groupCommit } from './group-commit';

/** The smallest start-queue claim (see startQueueChunk in the dispatcher). */
export const START_QUEUE_MIN_CHUNK = 64;

/** What a renewal's leases are: every lease the agent holds (a heartbeat, with its seq) or some (Hello). */
export interface HeartbeatListing {
  complete: boolean;
  intervalMs: number;
  /** Which heartbeat of the session this is, counting from 1 (AgentSession.heartbeats; unset: taken as built after every assignment). */
  heartbeat?: number;
}

/** An agent as GET /agents shows it (api/views.ts holds the schema). */
export type { AgentView } from '../api/views';

export interface Dispatcher {
  addSession(session: AgentSession): void;
  removeSession(session: AgentSession): void;
  /**
   * Renews the leases a heartbeat (or Hello) names; answers with one status per
   * lease. `complete: true` for a heartbeat, which lists everything the agent holds.
   */
  renew(session: AgentSession, leases: readonly LeaseRef[], listing: HeartbeatListing): Promise<RenewResult[]>;
  /** Records outcomes (fenced); answers with one ack per outcome. */
  complete(session: AgentSession, outcomes: readonly CompletionWithoutHolder[]): Promise<CompleteResult[]>;
  /** The agent gave `leases` back unstarted; `reason` (its words, checked at the edge) goes into each released run. */
  release(session: AgentSession, leases: readonly LeaseRef[], reason?: string): Promise<void>;
  /** Something may have become claimable: run a claim round soon. */
  wake(): void;
  /**
   * An operator aborted the run holding this lease (a NOTIFY from whichever
   * coordinator took the call): if one of our agents holds it, send it a
   * Revoke with reason CANCELLED. The lease stays held until the agent reports.
   */
  revokeAborted(lease: LeaseRef): void;
  /**
   * A user asked for a pre-dispatched lease back (a NOTIFY from whichever
   * coordinator took the cancel, pause or edit): if one of our agents holds
   * it, send it a Withdraw. It answers with Release (not started) or
   * WithdrawRefused (started).
   */
  withdraw(lease: LeaseRef): void;
  /** The agent keeps these pre-dispatched leases: their runs have started. */
  refuseWithdraw(session: AgentSession, leases: readonly LeaseRef[]): Promise<void>;
  /** Expired leases were reaped: forget them and tell their agents. */
  forgetExpired(expired: ReadonlyArray<{ jobId: string; leaseGeneration: number; leaseOwner: string | null }>): void;
  /** Agents connected to this coordinator, of one namespace (all when unset). */
  agents(namespace?: string): AgentView[];
  start(): void;
  /** Stops claiming; sessions stay until the caller drains them. */
  stop(): Promise<void>;
  sessions(): AgentSession[];
}

export function createDispatcher(deps: {
  store: Store;
  options: CoordinatorOptions;
  logger: Logger;
  metrics: Metrics;
  /** Called when an agent connects or leaves (presence publishes at once). */
  onSessionsChanged?: () => void;
  /** A claim span per assigned run when tracing is on (libs/tracing). */
  tracing?: Tracing;
  /** The database clock estimate; without a reading nothing is pre-dispatched (agents could not time the start). */
  dbClock?: Pick<DbClock, 'errorMs'>;
}): Dispatcher {
  const { store, options, logger, metrics } = deps;
  const tracing = deps.tracing ?? NO_TRACING;
  const sessions = new Set<AgentSession>();
  const heartbeatIntervalMs = options.heartbeatIntervalMs;
  const lastAssigned = new WeakMap<AgentSession, number>();
  let stopped = true;
  let round: Promise<void> | undefined;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  const standings = createAgentStandings({ baseMs: options.agentQuarantineMs, maxMs: options.agentQuarantineMaxMs });
  metrics.countQuarantined = () =>
    [...sessions].filter((s) => {
      const agent = agentOf(s);
      return agent !== undefined && standings.view(agent.agentId).quarantinedUntilMs !== null;
    }).length;

  /** Free slots the dispatcher may fill: the session's, less what the agent's standing allows. */
  function slotsFor(session: AgentSession): number {
    const agent = agentOf(session);
    return agent ? standings.slots(agent.agentId, freeSlots(session)) : 0;
  }

  function rankOf(session: AgentSession): number {
    const agent = agentOf(session);
    return agent ? standings.rank(agent.agentId) : 1;
  }

  /**
   * Pre-dispatch look-ahead for one agent's claim: the configured cap scaled by
   * the share of its slots that are free, so an idle agent takes jobs due up
   * to the cap ahead and a busy one keeps its slots for work due now (due jobs
   * always come first: the claim orders by due time). 0 for agents that did
   * not announce pre-dispatch, and until the database clock has been read.
   */
  function horizonFor(session: AgentSession, free: number): number {
    const agent = agentOf(session);
    if (!agent?.preDispatch || options.preDispatchMs <= 0) return 0;
    if (!Number.isFinite(deps.dbClock?.errorMs() ?? Number.POSITIVE_INFINITY)) return 0;
    return Math.floor((options.preDispatchMs * free) / agent.capacity);
  }

  /**
   * The agent's start queue (Hello.pre_dispatch_queue): how many more leases
   * it may hold for jobs not yet due, beyond its capacity, and the look-ahead
   * for them, both scaled by the share of its slots that will be idle (held
   * leases whose start has not come do not count as busy). Nothing for an agent on
   * probation, one whose slots are all busy (it could not start them), or
   * before the database clock has been read.
   */
  function queueFor(session: AgentSession): { room: number; horizonMs: number } {
    const agent = agentOf(session);
    const none = { room: 0, horizonMs: 0 };
    if (session.state.kind !== 'active' || !agent?.preDispatch || agent.preDispatchQueue <= 0 || options.preDispatchMs <= 0) return none;
    if (rankOf(session) > 0 || !Number.isFinite(deps.dbClock?.errorMs() ?? Number.POSITIVE_INFINITY)) return none;
    const idle = agent.capacity - busySlots(session);
    if (idle <= 0) return none;
    // The queue, too, in proportion to the idle slots: a mostly busy agent is not handed work it would give back.
    const room = agent.capacity + Math.floor((agent.preDispatchQueue * idle) / agent.capacity) - slotsTaken(session);
    if (room <= 0) return none;
    return { room, horizonMs: Math.floor((options.preDispatchMs * idle) / agent.capacity) };
  }
  /** Jobs claimed in the current round (read by scheduleNextWake). */
  let claimedThisRound = 0;

  // A flush that fails for any reason but the database being down is retried per submission (group-commit.ts).
  const isolate = (error: unknown) => !(error instanceof StoreUnavailableError);
  const renewals = groupCommit<HeldLeaseRef, RenewResult>(
    (leases) => store.lease.renew(leases, options.leaseMs, undefined, options.abortGraceMs),
    { isolate },
  );
  const completions = groupCommit<CompletionReport, CompleteResult>((reports) => store.lease.complete(reports), { isolate });
  const releases = groupCommit<ReleasedLease, ReleaseResult>((leases) => store.lease.release(leases, 'agent gave the lease back'), {
    isolate,
  });

  /** Leases as named by `agent`: the store accepts them only if `agent` (id and token) holds them. */
  function heldBy<T extends LeaseRef>(agent: AgentInfo, leases: readonly T[]): Array<T & HeldLeaseRef> {
    return leases.map((lease) => ({ ...lease, owner: agent.agentId, tokenId: agent.tokenId }));
  }

  function countForeign(agent: AgentInfo, what: string, results: ReadonlyArray<{ kind: string; jobId: string; leaseGeneration: number }>): void {
    const foreign = results.filter((result) => result.kind === 'not-owner' || ('reason' in result && result.reason === 'not-owner'));
    if (foreign.length === 0) return;
    metrics.foreignLeaseRefusals.inc({ operation: what }, foreign.length);
    logger.warn(
      { agentId: agent.agentId, namespace: agent.namespace, operation: what, leases: foreign.slice(0, 5).map((r) => `${r.jobId}#${r.leaseGeneration}`), count: foreign.length },
      "refused: an agent named leases held by another agent",
    );
  }

  function wake(): void {
    if (stopped) return;
    if (round) {
      again = true;
      return;
    }
    claimedThisRound = 0;
    round = claimRound()
      .catch((error: unknown) => {
        logger.warn({ err: error }, 'claim round failed; retrying on the next wake');
      })
      .finally(() => {
        round = undefined;
        if (again) {
          again = false;
          wake();
        } else {
          void scheduleNextWake();
        }
      });
  }

  async function claimRound(): Promise<void> {
    // Least-loaded first; among equals, the one that waited longest for work (round robin).
    // Claims for different agents run concurrently on separate connections (SKIP LOCKED
    // keeps them apart); at most `pool size - 2` at once, leaving room for renewals and
    // completions, which must never queue behind claims.
    const silentSince = performance.now() - 2 * heartbeatIntervalMs;
    // Agents on probation come after every agent in good standing.
    const candidates = [...sessions]
      .filter((s) => (slotsFor(s) > 0 || queueFor(s).room > 0) && s.lastSeenMs >= silentSince)
      .sort(
        (a, b) =>
          rankOf(a) - rankOf(b) || load(a) - load(b) || (lastAssigned.get(a) ?? 0) - (lastAssigned.get(b) ?? 0),
      );
    const parallel = Math.max(1, options.dbPoolSize - 2);
    // Agents with the same namespace and task set ask for the same rows. The first of them to claim in a
    // round probes: a claim that comes back short says nothing more is due (and unlocked) for that set,
    // and the others are not asked; one that comes back full lets the others claim in parallel. Without
    // it, a thousand idle agents cost a thousand claim statements a round (bench W9: a 2,000-job spike's
    // p99 went from 0.4 to 3.1 s, PostgreSQL's CPU from 0.1 to 5.9 s).
    const exhausted = new Set<string>();
    const busy = new Set<string>();
    // The same for start-queue claims (jobs not yet due, beyond free slots).
    const aheadExhausted = new Set<string>();
    let queue = candidates;
    while (queue.length > 0 && !stopped) {
      const batch: AgentSession[] = [];
      const rest: AgentSession[] = [];
      const probing = new Set<string>();
      for (const session of queue) {
        const agent = agentOf(session);
        if (!agent) continue;
        const key = claimKey(agent);
        if (exhausted.has(key) && aheadExhausted.has(key)) continue;
        if (batch.length < parallel && (busy.has(key) || !probing.has(key))) {
          batch.push(session);
          probing.add(key);
        } else {
          rest.push(session);
        }
      }
      await Promise.all(
        batch.map(async (session) => {
          await claimFor(session, exhausted, busy);
          await claimAhead(session, aheadExhausted);
        }),
      );
      queue = rest;
    }
  }

  /** The claim statement's scope: agents with the same key ask for the same rows. Made once per agent, not per round. */
  const claimKeys = new WeakMap<AgentInfo, string>();
  function claimKey(agent: AgentInfo): string {
    let key = claimKeys.get(agent);
    if (key === undefined) claimKeys.set(agent, (key = `${agent.namespace}\u0000${[...agent.tasks].sort().join('\u0000')}`));
    return key;
  }

  /** Claims for one agent's free slots; records in `exhausted` or `busy` what the claim says of its key. */
  async function claimFor(session: AgentSession, exhausted: Set<string>, busy: Set<string>): Promise<void> {
    const agent = agentOf(session);
    const free = slotsFor(session);
    if (!agent || free === 0) return;
    const key = claimKey(agent);
    if (exhausted.has(key)) return;
    const limit = Math.min(free, options.claimBatch);
    const claimed = await claimAndAssign(session, agent, { limit, horizonMs: horizonFor(session, free) });
    if (claimed < limit) exhausted.add(key);
    else busy.add(key);
    if (claimed === free) again = true; // it may have more due; look again after this round
  }

  /**
   * Fills one agent's start queue once its free slots are taken: jobs not yet
   * due, within the queue's look-ahead (queueFor). A claim that comes back
   * short says nothing more is ahead for the agent's key this round.
   */
  async function claimAhead(session: AgentSession, exhausted: Set<string>): Promise<void> {
    const agent = agentOf(session);
    if (!agent || slotsFor(session) > 0) return;
    const key = claimKey(agent);
    if (exhausted.has(key)) return;
    const { room, horizonMs } = queueFor(session);
    if (room === 0 || horizonMs === 0) return;
    const limit = Math.min(room, options.claimBatch, startQueueChunk(agent));
    const claimed = await claimAndAssign(session, agent, { limit, horizonMs, futureOnly: true });
    if (claimed < limit) exhausted.add(key);
    else again = true;
  }

  /**
   * At most this many jobs per start-queue claim: a spike seen ahead is dealt
   * out in chunks, one per agent per round, least loaded first, so agents of
   * one key end up with shares within a chunk of each other. (One claim of
   * `claimBatch` rows per agent left two agents with 1,244 and 756 of a
   * 2,000-job spike, and the spike's tail is the busier agent's.) Half the
   * agent's slots, at least START_QUEUE_MIN_CHUNK: few statements for small
   * agents.
   */
  /** Whether heartbeat number `heartbeat` was built after `held`'s assignment reached the agent (see HeldLease.assignedAtHeartbeat). */
  function builtAfterAssignment(held: HeldLease, heartbeat: number | undefined): boolean {
    return heartbeat === undefined || held.assignedAtHeartbeat === undefined || heartbeat >= held.assignedAtHeartbeat + 2;
  }

  function startQueueChunk(agent: AgentInfo): number {
    return Math.max(START_QUEUE_MIN_CHUNK, Math.ceil(agent.capacity / 2));
  }

  /** One claim statement for `agent`, and its assignments sent; returns how many were claimed. */
  async function claimAndAssign(
    session: AgentSession,
    agent: AgentInfo,
    scope: { limit: number; horizonMs: number; futureOnly?: boolean },
  ): Promise<number> {
    // Read before claiming: the agent sent this heartbeat before the claim happened.
    const anchorSeq = session.lastHeartbeatSeq;
    const claimed = await store.lease.claimDue({
      owner: agent.agentId,
      tokenId: agent.tokenId,
      namespace: agent.namespace,
      tasks: agent.tasks,
      leaseMs: options.leaseMs,
      misfireThresholdMs: options.misfireThresholdMs,
      ...scope,
    });
    claimedThisRound += claimed.length;
    if (claimed.length === 0) return 0;
    metrics.claims.inc(claimed.length);
    let early = 0;
    for (const job of claimed) {
      if (job.dueAtMs > job.claimedAtMs) early++;
      metrics.dispatchLag.observe(Math.max(0, job.claimedAtMs - job.dueAtMs) / 1000);
    }
    if (early > 0) metrics.preDispatched.inc(early);
    if (session.state.kind !== 'active') {
      // The agent went away (or started draining) while we claimed: give the jobs back.
      await store.lease.release(heldBy(agent, claimed.map(toLeaseRef)), 'agent left before assignment');
      return claimed.length;
    }
    const seenAtMs = performance.now();
    lastAssigned.set(session, seenAtMs);
    const assignedAtHeartbeat = session.heartbeats;
    for (const job of claimed) {
      const key = leaseKey(job.jobId, job.leaseGeneration);
      // Built whole, in one shape, rather than spread from a LeaseRef: this runs once per claimed job.
      session.held.set(key, { jobId: job.jobId, leaseGeneration: job.leaseGeneration, seenAtMs, named: false, assignedAtHeartbeat });
      if (job.dueAtMs > job.claimedAtMs) session.ahead.set(key, seenAtMs + (job.dueAtMs - job.claimedAtMs));
    }
    const assignments = tracing.enabled ? claimed.map((job) => tracedAssignment(job, anchorSeq, agent.agentId)) : claimed.map((job) => toAssignment(job, anchorSeq));
    session.send({ kind: { case: 'assignments', value: { assignments } } });
    return claimed.length;
  }

  /** The assignment of a claimed run, with a span for its claim (child of the job's creation) whose context it carries. */
  function tracedAssignment(job: ClaimedJob, anchorSeq: bigint, agentId: string) {
    const span = tracing.startSpan('kairos.job.claim', {
      parent: job.traceParent,
      attributes: {
        'kairos.job.id': job.jobId,
        'kairos.run.id': job.runId,
        'kairos.task': job.task,
        'kairos.attempt': job.attempt,
        'kairos.lease.generation': job.leaseGeneration,
        'kairos.agent.id': agentId,
        'kairos.dispatch_lag_ms': Math.max(0, job.claimedAtMs - job.dueAtMs),
      },
    });
    span.end();
    return toAssignment(job, anchorSeq, span.traceparent);
  }

  async function scheduleNextWake(): Promise<void> {
    if (stopped) return;
    clearTimeout(timer);
    const jitter = 0.8 + Math.random() * 0.4;
    let delayMs = options.pollIntervalMs * jitter;
    const tasks = new Set<string>();
    let lookAheadMs = 0;
    for (const session of sessions) {
      const free = slotsFor(session);
      const ahead = free === 0 ? queueFor(session).horizonMs : 0;
      if (free === 0 && ahead === 0) continue;
      for (const task of agentOf(session)?.tasks ?? []) tasks.add(task);
      lookAheadMs = Math.max(lookAheadMs, free > 0 ? horizonFor(session, free) : ahead);
    }
    // A round that claimed nothing with its look-ahead would only repeat: wait for the due instant itself.
    const claimedBefore = claimedThisRound;
    if (tasks.size > 0) {
      try {
        const untilDue = await store.jobs.msUntilNextDue([...tasks]);
        if (untilDue !== null) {
          const early = untilDue - lookAheadMs >= 10 || claimedBefore > 0 ? lookAheadMs : 0;
          delayMs = Math.min(delayMs, Math.max(0, untilDue - early + 1));
        }
      } catch (error: unknown) {
        logger.debug({ err: error }, 'could not read the next due time');
      }
    }
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(wake, delayMs);
  }

  /** The agent's standing with wall-clock instants, for views and logs. */
  function standingView(agentId: string): Pick<AgentView, 'quarantinedUntil' | 'probation'> {
    const view = standings.view(agentId);
    const until = view.quarantinedUntilMs === null ? null : new Date(Date.now() + (view.quarantinedUntilMs - performance.now())).toISOString();
    return { quarantinedUntil: until, probation: view.probation };
  }

  /** The sessions here that hold `lease` (at most one, unless a stream is being replaced). */
  function holdersOf(lease: LeaseRef): AgentSession[] {
    const key = leaseKey(lease.jobId, lease.leaseGeneration);
    return [...sessions].filter((session) => session.held.has(key));
  }

  /** Renews the leases a heartbeat names and applies the answer to the session's held leases (see `renew`). */
  async function renewHeld(
    session: AgentSession,
    agent: AgentInfo,
    leases: readonly LeaseRef[],
    listing: HeartbeatListing,
    sentAtMs: number,
  ): Promise<RenewResult[]> {
    const results = await renewals.submit(heldBy(agent, leases));
    countForeign(agent, 'renew', results);
    metrics.renewLatency.observe((performance.now() - sentAtMs) / 1000);
    let lost = 0;
    const seenAtMs = performance.now();
    for (const result of results) {
      const key = leaseKey(result.jobId, result.leaseGeneration);
      if (result.kind === 'renewed') {
        // Ended since this renewal read it (its completion committed meanwhile): not held any more.
        if (!session.held.has(key) && session.forgottenWhileRenewing.has(key)) continue;
        session.held.set(key, { jobId: result.jobId, leaseGeneration: result.leaseGeneration, seenAtMs, named: true });
      }
      else {
        lost++;
        forgetLease(session, key);
      }
    }
    if (listing.complete) {
      const named = new Set(leases.map((lease) => leaseKey(lease.jobId, lease.leaseGeneration)));
      let neverNamed = 0;
      for (const [key, held] of session.held) {
        if (!named.has(key) && held.seenAtMs < sentAtMs - 2 * listing.intervalMs) {
          // A heartbeat that may have crossed the assignment says nothing of it yet.
          if (!held.named && !builtAfterAssignment(held, listing.heartbeat)) continue;
          forgetLease(session, key);
          if (!held.named) neverNamed++;
        }
      }
      if (standings.unrenewed(agent.agentId, neverNamed)) {
        metrics.agentQuarantines.inc();
        logger.warn(
          { agentId: agent.agentId, namespace: agent.namespace, unrenewed: neverNamed, until: standingView(agent.agentId).quarantinedUntil },
          'agent quarantined: it took leases and never renewed them',
        );
      }
    }
    metrics.renewals.inc(results.length - lost);
    if (lost > 0) {
      metrics.lostLeases.inc(lost);
      wake();
    }
    return results;
  }

  function load(session: AgentSession): number {
    const agent = agentOf(session);
    return agent ? slotsTaken(session) / agent.capacity : 1;
  }

  return {
    addSession(session) {
      sessions.add(session);
      metrics.connectedAgents.set(sessions.size);
      deps.onSessionsChanged?.();
      wake();
    },
    removeSession(session) {
      if (!sessions.delete(session)) return;
      metrics.connectedAgents.set(sessions.size);
      deps.onSessionsChanged?.();
    },
    async renew(session, leases, listing) {
      const agent = agentOf(session);
      if (!agent) return [];
      session.lastHeartbeatAt = new Date();
      const sentAtMs = performance.now();
      session.renewing++;
      try {
        return await renewHeld(session, agent, leases, listing, sentAtMs);
      } finally {
        if (--session.renewing === 0) session.forgottenWhileRenewing.clear();
      }
    },
    async complete(session, outcomes) {
      const agent = agentOf(session);
      if (!agent) return [];
      // One key per outcome, for both passes below (the store answers one result per report, in order).
      const keys = outcomes.map((outcome) => leaseKey(outcome.jobId, outcome.leaseGeneration));
      if (agent.slotsFreeOnOutcome) {
        // Their handlers have ended: the slots are free now, and the claim that fills them runs beside this
        // completion's write instead of after it (Hello.slots_free_on_outcome).
        let freed = 0;
        for (const key of keys) {
          if (session.held.has(key) && !session.reported.has(key)) {
            session.reported.add(key);
            freed++;
          }
        }
        if (freed > 0) wake();
      }
      const { agentId: owner, tokenId } = agent;
      const reports = outcomes.map(
        ({ jobId, leaseGeneration, outcome, error }): CompletionReport => ({ jobId, leaseGeneration, outcome, error, owner, tokenId }),
      );
      const results = await completions.submit(reports);
      countForeign(agent, 'complete', results);
      let recorded = 0;
      const finished = new Map<string, number>();
      for (let index = 0; index < results.length; index++) {
        const result = results[index]!;
        const key = keys[index]!;
        if (result.kind === 'not-owner') {
          session.reported.delete(key);
          continue;
        }
        forgetLease(session, key);
        if (result.kind === 'recorded') {
          recorded++;
          finished.set(result.runOutcome, (finished.get(result.runOutcome) ?? 0) + 1);
          if (result.state === 'DEAD') metrics.jobsDead.inc();
          if (result.skipped > 0) metrics.occurrencesSkipped.inc(result.skipped);
        }
        if (result.kind === 'stale') {
          metrics.staleReports.inc();
          logger.warn(
            { jobId: result.jobId, leaseGeneration: result.leaseGeneration, agentId: agent.agentId },
            'stale outcome rejected: the lease had moved on',
          );
        }
      }
      if (recorded > 0) standings.succeeded(agent.agentId);
      for (const [outcome, count] of finished) metrics.runsFinished.inc({ outcome }, count);
      wake();
      return results;
    },
    async release(session, leases, reason) {
      const agent = agentOf(session);
      if (!agent) return;
      // Forgotten at once, not after the statement: the agent already has (its next heartbeat does not
      // name them), and a heartbeat handled meanwhile must not count them as taken and never renewed.
      for (const lease of leases) forgetLease(session, leaseKey(lease.jobId, lease.leaseGeneration));
      countForeign(agent, 'release', await releases.submit(heldBy(agent, leases).map((lease) => ({ ...lease, reason }))));
      wake();
    },
    wake,
    withdraw(lease) {
      for (const session of holdersOf(lease)) {
        session.send({ kind: { case: 'withdraw', value: { leases: [toWireLease(lease)] } } });
        logger.debug({ jobId: lease.jobId, leaseGeneration: lease.leaseGeneration, agentId: agentOf(session)?.agentId }, 'withdraw: asked the holder for a pre-dispatched lease');
      }
    },
    async refuseWithdraw(session, leases) {
      const agent = agentOf(session);
      if (!agent || leases.length === 0) return;
      await store.lease.refuseWithdraw(heldBy(agent, leases));
    },
    revokeAborted(lease) {
      for (const session of holdersOf(lease)) {
        session.send({ kind: { case: 'revoke', value: { leases: [toWireLease(lease)], reason: LeaseLostReason.CANCELLED } } });
        metrics.abortRevokes.inc();
        logger.info({ jobId: lease.jobId, leaseGeneration: lease.leaseGeneration, agentId: agentOf(session)?.agentId }, 'abort: lease revoked');
      }
    },
    forgetExpired(expired) {
      const byOwner = new Map<string, LeaseRef[]>();
      for (const lease of expired) {
        if (!lease.leaseOwner) continue;
        byOwner.set(lease.leaseOwner, [...(byOwner.get(lease.leaseOwner) ?? []), lease]);
      }
      for (const session of sessions) {
        const agentId = agentOf(session)?.agentId;
        const leases = agentId ? byOwner.get(agentId) : undefined;
        if (!leases) continue;
        const revoked = leases.filter((lease) => forgetLease(session, leaseKey(lease.jobId, lease.leaseGeneration)));
        if (revoked.length > 0) {
          session.send({
            kind: {
              case: 'revoke',
              value: { leases: revoked.map(toWireLease), reason: LeaseLostReason.EXPIRED },
            },
          });
        }
      }
      if (expired.length > 0) wake();
    },
    agents(namespace) {
      return [...sessions].flatMap((session) => {
        const agent = agentOf(session);
        if (!agent || (namespace !== undefined && agent.namespace !== namespace)) return [];
        return [
          {
            agentId: agent.agentId,
            namespace: agent.namespace,
            ...standingView(agent.agentId),
            tasks: [...agent.tasks],
            capacity: agent.capacity,
            inFlight: session.held.size,
            draining: session.state.kind === 'draining',
            version: agent.version,
            connectedAt: session.connectedAt.toISOString(),
            lastHeartbeatAt: session.lastHeartbeatAt?.toISOString() ?? null,
            coordinatorId: options.coordinatorId,
          },
        ];
      });
    },
    start() {
      stopped = false;
      wake();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await round;
      await Promise.all([renewals.idle(), completions.idle(), releases.idle()]);
    },
    sessions: () => [...sessions],
  };
}

function toLeaseRef(job: ClaimedJob): LeaseRef {
  return { jobId: job.jobId, leaseGeneration: job.leaseGeneration };
}
