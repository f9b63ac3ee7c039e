/** Connected agents as this client's callers see them. */
import type { Agent as WireAgent } from '@kairos/proto';
import { dateOrNull, textOrNull } from './wire-values';

export interface Agent {
  /** Identifier the agent announced (KAIROS_AGENT_ID). */
  agentId: string;
  /** Task names it runs. */
  tasks: string[];
  /** Jobs it runs at once. */
  capacity: number;
  /** Leases it holds right now. */
  inFlight: number;
  connectedAt: Date | null;
  lastHeartbeatAt: Date | null;
  /** True once it announced a drain: it takes no new work. */
  draining: boolean;
  version: string | null;
  /** Coordinator whose stream it is on. */
  coordinatorId: string | null;
  /** Namespace of its token: it runs jobs of this namespace only. */
  namespace: string | null;
  /** Set while it is quarantined (it took leases and never renewed them): no new work until then. */
  quarantinedUntil: Date | null;
  /** After a quarantine, until it reports an outcome: one lease at a time. */
  probation: boolean;
}

export function agentFromWire(agent: WireAgent): Agent {
  return {
    agentId: agent.agentId,
    tasks: [...agent.tasks],
    capacity: agent.capacity,
    inFlight: agent.inFlight,
    connectedAt: dateOrNull(agent.connectedAt),
    lastHeartbeatAt: dateOrNull(agent.lastHeartbeatAt),
    draining: agent.draining,
    version: textOrNull(agent.version),
    coordinatorId: textOrNull(agent.coordinatorId),
    namespace: textOrNull(agent.namespace),
    quarantinedUntil: dateOrNull(agent.quarantinedUntil),
    probation: agent.probation,
  };
}
