/**
 * Agents spread across coordinators. Each coordinator claims only for the
 * agents connected to it, so a skew in streams is a skew in work: after a
 * rolling update the newest coordinator has no agents, and nothing would ever
 * move them (an agent's stream lives as long as its connection).
 *
 * After each presence publication a coordinator compares its agents with the
 * other live coordinators' (coordinator_presence). When some coordinator
 * serves at least two fewer, it sends Drain to the agents it serves above
 * floor(agents / coordinators): the ones holding the fewest leases. A spread
 * where every coordinator is within one of the others is left alone. A drained agent keeps running what it holds,
 * dials a new connection (the Service, or DNS round-robin through the
 * headless Service, routes it), announces its leases there and only then
 * closes the old stream; the leases live in the database, so no run is
 * disturbed. An agent that lands here again is simply counted again: the
 * next decision waits two intervals, for the moved agents to be published
 * where they landed, and so converges without two coordinators ever moving
 * the same surplus.
 */
import type { Logger } from 'pino';
import type { CoordinatorRow } from '@kairos/store';
import { drainSessions, type AgentSession } from './agent-session';

/** How many of its agents a coordinator serving `mine` should move, given what the others serve. */
export function agentsToMove(mine: number, others: readonly number[]): number {
  if (others.length === 0 || mine === 0) return 0;
  const total = mine + others.reduce((sum, count) => sum + count, 0);
  // An even spread has every coordinator within one of the others; until then the fuller ones give
  // down to the lower share (10 agents over three coordinators: 4, 4, 2 becomes 3, 3, 4).
  if (mine - Math.min(...others) < 2) return 0;
  return Math.max(0, mine - Math.floor(total / (others.length + 1)));
}

export interface Rebalancer {
  /** One decision (after a presence publication): drains this coordinator's surplus agents, if any. */
  check(): Promise<void>;
}

export function createRebalancer(deps: {
  coordinatorId: string;
  /** Live coordinators and the agents each served at its last publication. */
  coordinators: () => Promise<CoordinatorRow[]>;
  sessions: () => AgentSession[];
  /** Given to the agents in Drain: how long the old stream is served while they move. */
  graceMs: number;
  /** A drained stream still open this long (its agent could not move) is ended; the agent redials. */
  abandonAfterMs: number;
  onMoved: (count: number) => void;
  logger: Logger;
}): Rebalancer {
  const { coordinatorId, logger } = deps;
  // Decisions to skip: the agents moved last time are published where they landed one interval later.
  let cooldown = 0;

  return {
    async check() {
      if (cooldown > 0) {
        cooldown -= 1;
        return;
      }
      const active = deps.sessions().filter((session) => session.state.kind === 'active');
      const others = (await deps.coordinators()).filter((row) => row.coordinatorId !== coordinatorId).map((row) => row.agents);
      const surplus = agentsToMove(active.length, others);
      if (surplus === 0) return;
      // The fewest leases first: moving an idle agent moves no heartbeat.
      const moving = [...active].sort((a, b) => a.held.size - b.held.size).slice(0, surplus);
      drainSessions(moving, deps.graceMs);
      for (const session of moving) {
        setTimeout(() => {
          if (session.state.kind === 'draining' && session.state.by === 'coordinator') session.end();
        }, deps.abandonAfterMs).unref();
      }
      cooldown = 2;
      deps.onMoved(moving.length);
      logger.info(
        { moved: moving.map((session) => (session.state.kind === 'draining' ? session.state.agent.agentId : '?')), mine: active.length, others },
        'serving more than an even share of the agents: asked some to move to another coordinator',
      );
    },
  };
}
