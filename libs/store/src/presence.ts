/**
 * Agent presence (migration 0011): each coordinator publishes the agents
 * connected to it — one statement that upserts them all, drops its rows for
 * agents that left, and deletes anyone's rows long unrefreshed — and any
 * coordinator lists a namespace's agents from it. The view is the agent as
 * the API shows it (JSON), so the table need not change when the view does.
 */
import type { Pool } from 'pg';
import { storeCall } from './pg-errors';

export interface PresentAgent {
  namespace: string;
  agentId: string;
  /** The agent as the API shows it (AgentView), without the fields the row carries. */
  view: Record<string, unknown>;
}

export interface PresenceRow extends PresentAgent {
  coordinatorId: string;
  /** Milliseconds since its coordinator last published it (database clock). */
  ageMs: number;
}

export interface CoordinatorRow {
  coordinatorId: string;
  /** Agent streams it served at its last publication (all namespaces). */
  agents: number;
}

export interface PresenceQueries {
  /**
   * The agents connected to `coordinatorId` now: upserted, current for
   * `freshForMs` (until the next publication is overdue); its other rows
   * deleted, and anyone's rows stale for `forgetAfterMs` deleted. The
   * coordinator itself is upserted with its count of agents (even none), and
   * coordinators stale for `forgetAfterMs` deleted. One statement.
   */
  publish(coordinatorId: string, agents: readonly PresentAgent[], options: { freshForMs: number; forgetAfterMs: number }): Promise<void>;
  /** A coordinator that stops: its rows go at once. */
  withdraw(coordinatorId: string): Promise<void>;
  /** Agents whose publication is current (of a namespace, or all), by agent id. */
  list(options?: { namespace?: string }): Promise<PresenceRow[]>;
  /** Coordinators whose publication is current, by id. */
  coordinators(): Promise<CoordinatorRow[]>;
}

export function presenceQueries(pool: Pool): PresenceQueries {
  return {
    publish: (coordinatorId, agents, { freshForMs, forgetAfterMs }) =>
      storeCall('presence.publish', async () => {
        await pool.query(
          `WITH current AS (
             SELECT * FROM unnest($2::text[], $3::text[], $4::jsonb[]) AS a(namespace, agent_id, view)
           ), coordinator AS (
             INSERT INTO coordinator_presence (coordinator_id, agents, seen_at, fresh_until)
             VALUES ($1, $7, now(), now() + make_interval(secs => $6::double precision / 1000))
             ON CONFLICT (coordinator_id) DO UPDATE
               SET agents = excluded.agents, seen_at = excluded.seen_at, fresh_until = excluded.fresh_until
             RETURNING 1
           ), forgotten AS (
             DELETE FROM coordinator_presence
             WHERE coordinator_id <> $1 AND fresh_until < now() - make_interval(secs => $5::double precision / 1000)
             RETURNING 1
           ), upserted AS (
             INSERT INTO agent_presence (namespace, agent_id, coordinator_id, view, seen_at, fresh_until)
             SELECT namespace, agent_id, $1, view, now(), now() + make_interval(secs => $6::double precision / 1000) FROM current
             ON CONFLICT (namespace, agent_id) DO UPDATE
               SET coordinator_id = excluded.coordinator_id, view = excluded.view, seen_at = excluded.seen_at,
                   fresh_until = excluded.fresh_until
             RETURNING 1
           )
           -- Never a row the upsert writes (one statement must not modify a row twice).
           DELETE FROM agent_presence p
           WHERE NOT EXISTS (SELECT 1 FROM current c WHERE c.namespace = p.namespace AND c.agent_id = p.agent_id)
             AND (p.coordinator_id = $1 OR p.fresh_until < now() - make_interval(secs => $5::double precision / 1000))`,
          [
            coordinatorId,
            agents.map((agent) => agent.namespace),
            agents.map((agent) => agent.agentId),
            agents.map((agent) => JSON.stringify(agent.view)),
            forgetAfterMs,
            freshForMs,
            agents.length,
          ],
        );
      }),
    withdraw: (coordinatorId) =>
      storeCall('presence.withdraw', async () => {
        await pool.query(
          `WITH gone AS (DELETE FROM coordinator_presence WHERE coordinator_id = $1 RETURNING 1)
           DELETE FROM agent_presence WHERE coordinator_id = $1`,
          [coordinatorId],
        );
      }),
    list: ({ namespace } = {}) =>
      storeCall('presence.list', async () => {
        const { rows } = await pool.query<{ namespace: string; agent_id: string; coordinator_id: string; view: Record<string, unknown>; age_ms: string }>(
          `SELECT namespace, agent_id, coordinator_id, view, floor(extract(epoch FROM now() - seen_at) * 1000) AS age_ms
           FROM agent_presence
           WHERE ($1::text IS NULL OR namespace = $1) AND fresh_until > now()
           ORDER BY agent_id`,
          [namespace ?? null],
        );
        return rows.map((row) => ({
          namespace: row.namespace,
          agentId: row.agent_id,
          coordinatorId: row.coordinator_id,
          view: row.view,
          ageMs: Number(row.age_ms),
        }));
      }),
    coordinators: () =>
      storeCall('presence.coordinators', async () => {
        const { rows } = await pool.query<{ coordinator_id: string; agents: number }>(
          'SELECT coordinator_id, agents FROM coordinator_presence WHERE fresh_until > now() ORDER BY coordinator_id',
        );
        return rows.map((row) => ({ coordinatorId: row.coordinator_id, agents: row.agents }));
      }),
  };
}
