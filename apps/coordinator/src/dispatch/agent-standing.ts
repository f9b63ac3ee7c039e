/**
 * Quarantine for agents that take work and do not renew it.
 *
 * An agent that advertises slots, heartbeats, and never runs (or even lists)
 * what it is assigned would hold every job it gets until the lease expires,
 * over and over, and each expiry spends an attempt: with a large enough
 * capacity it could push jobs to DEAD while healthy agents sit idle. The
 * signal is precise: a lease assigned to the agent that its heartbeats never
 * named, for two heartbeat intervals (the dispatcher drops such a lease from
 * the agent's slots). A healthy agent names every lease it holds in every
 * heartbeat; a paused one sends no heartbeats at all, so it is not counted
 * here (its leases expire and are fenced as usual).
 *
 * On the first such lease the agent is quarantined: no assignments for
 * `baseMs`, doubling with each quarantine up to `maxMs`. After a quarantine it
 * is on probation: at most one lease at a time, and claimed for only after
 * every healthy agent has had its turn, until one of its outcomes is recorded,
 * which clears everything. Attempts still count as the design says (decision
 * 0011 explains why this bounds the damage instead).
 *
 * Standing is kept per agent id on this coordinator, so a reconnect does not
 * wash it away; entries of agents in good standing are not kept.
 */
export interface StandingOptions {
  /** First quarantine length. */
  baseMs: number;
  /** Longest quarantine. */
  maxMs: number;
  /** Monotonic clock (performance.now); injectable for tests. */
  nowMs?: () => number;
}

export interface StandingView {
  /** Monotonic ms until which the agent gets no work; null when not quarantined. */
  quarantinedUntilMs: number | null;
  probation: boolean;
}

interface Standing {
  quarantines: number;
  untilMs: number;
}

export interface AgentStandings {
  /** `count` leases assigned to `agentId` were never renewed. Returns true when this starts a quarantine. */
  unrenewed(agentId: string, count: number): boolean;
  /** An outcome of `agentId` was recorded: it works. */
  succeeded(agentId: string): void;
  /** Slots the dispatcher may fill, given the agent's free slots. */
  slots(agentId: string, free: number): number;
  /** 0 for agents in good standing, 1 on probation: claim for lower ranks first. */
  rank(agentId: string): number;
  view(agentId: string): StandingView;
}

export function createAgentStandings(options: StandingOptions): AgentStandings {
  const nowMs = options.nowMs ?? (() => performance.now());
  const standings = new Map<string, Standing>();

  return {
    unrenewed(agentId, count) {
      if (count <= 0) return false;
      const standing = standings.get(agentId) ?? { quarantines: 0, untilMs: 0 };
      if (standing.untilMs > nowMs()) return false;
      standing.quarantines += 1;
      standing.untilMs = nowMs() + Math.min(options.maxMs, options.baseMs * 2 ** (standing.quarantines - 1));
      standings.set(agentId, standing);
      return true;
    },
    succeeded(agentId) {
      standings.delete(agentId);
    },
    slots(agentId, free) {
      const standing = standings.get(agentId);
      if (standing === undefined) return free;
      if (standing.untilMs > nowMs()) return 0;
      return Math.min(free, 1);
    },
    rank(agentId) {
      return standings.has(agentId) ? 1 : 0;
    },
    view(agentId) {
      const standing = standings.get(agentId);
      if (standing === undefined) return { quarantinedUntilMs: null, probation: false };
      const quarantined = standing.untilMs > nowMs();
      return { quarantinedUntilMs: quarantined ? standing.untilMs : null, probation: !quarantined };
    },
  };
}
