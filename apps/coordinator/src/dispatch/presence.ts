/**
 * The cluster-wide agents view. Each coordinator publishes the agents
 * connected to it to the store (libs/store presence.ts) in one statement every
 * `intervalMs`, and at once when an agent connects or leaves — never per
 * heartbeat. Reading through any coordinator gives every agent of the
 * namespace: the store's current rows (each current for three of its
 * publisher's intervals, so a coordinator that died drops out after that), with this coordinator's own
 * agents taken live from its sessions. When the store cannot be read, the
 * answer is this coordinator's agents alone (logged), not an error: during a
 * database outage the agents are what an operator wants to see. The
 * coordinator itself is published too, with its count of agents, for the
 * rebalancer (rebalance.ts), which runs after each publication.
 */
import type { Logger } from 'pino';
import type { Store } from '@kairos/store';
import type { AgentView } from '../api/views';
import type { Dispatcher } from './dispatcher';

export interface Presence {
  start(): void;
  /** Stops publishing and withdraws this coordinator's agents. */
  stop(): Promise<void>;
  /** Publish soon: an agent connected or left. */
  poke(): void;
  /** The agents of a namespace (all namespaces when unset) connected to any coordinator. */
  agents(namespace?: string): Promise<AgentView[]>;
}

export function createPresence(deps: {
  store: Store;
  dispatcher: Pick<Dispatcher, 'agents'>;
  coordinatorId: string;
  intervalMs: number;
  logger: Logger;
  /** Runs after each publication that went through (the rebalancer's decision). */
  afterPublish?: () => Promise<void>;
}): Presence {
  const { store, dispatcher, coordinatorId, intervalMs, logger, afterPublish } = deps;
  // A row stays current for three of this coordinator's intervals (its own pace, whatever the readers').
  const freshForMs = intervalMs * 3;
  const forgetAfterMs = intervalMs * 10;
  let timer: NodeJS.Timeout | undefined;
  let publishing: Promise<void> | undefined;
  let again = false;
  let stopped = true;

  async function publishOnce(): Promise<void> {
    const agents = dispatcher.agents().map(({ agentId, namespace, ...view }) => ({ agentId, namespace, view }));
    await store.presence.publish(coordinatorId, agents, { freshForMs, forgetAfterMs });
    await afterPublish?.();
  }

  /** Publishes now, or right after the publish in progress; then the next one in `intervalMs`. */
  function publish(): void {
    if (stopped) return;
    if (publishing) {
      again = true;
      return;
    }
    clearTimeout(timer);
    publishing = publishOnce()
      .catch((error: unknown) => logger.warn({ err: error }, 'agent presence not published; will retry'))
      .finally(() => {
        publishing = undefined;
        if (again) {
          again = false;
          publish();
        } else if (!stopped) {
          timer = setTimeout(publish, intervalMs);
        }
      });
  }

  return {
    start() {
      stopped = false;
      publish();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await publishing;
      await store.presence.withdraw(coordinatorId).catch((error: unknown) => logger.warn({ err: error }, 'agent presence not withdrawn'));
    },
    poke: publish,
    async agents(namespace) {
      const local = dispatcher.agents(namespace);
      let rows: Awaited<ReturnType<Store['presence']['list']>>;
      try {
        rows = await store.presence.list(namespace === undefined ? {} : { namespace });
      } catch (error: unknown) {
        logger.debug({ err: error }, 'agent presence unreadable: answering with this coordinator agents only');
        return local;
      }
      const byId = new Map<string, AgentView>();
      for (const row of rows) {
        byId.set(`${row.namespace}\u0000${row.agentId}`, { ...(row.view as Omit<AgentView, 'agentId' | 'namespace'>), agentId: row.agentId, namespace: row.namespace });
      }
      // This coordinator's own agents, live (an agent that just connected, or just left).
      for (const [key, row] of byId) if (row.coordinatorId === coordinatorId) byId.delete(key);
      for (const agent of local) byId.set(`${agent.namespace}\u0000${agent.agentId}`, agent);
      return [...byId.values()].sort((a, b) => (a.agentId < b.agentId ? -1 : a.agentId > b.agentId ? 1 : a.namespace < b.namespace ? -1 : 1));
    },
  };
}
