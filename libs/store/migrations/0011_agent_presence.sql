-- Agent presence (docs/api.md "Agents"): which agents are connected to which
-- coordinator, so GET /agents, ListAgents and the console see the whole
-- cluster through any coordinator. Each coordinator writes all of its agents
-- in one statement every KAIROS_PRESENCE_INTERVAL_MS (and at once when one
-- connects or leaves), never per heartbeat. A row is current until
-- fresh_until, three of its publisher's intervals after it was written, so a
-- coordinator that died drops out then; writers delete rows long past it.
-- UNLOGGED: presence is rebuilt within one interval after a crash or a
-- failover, so it need not cost WAL (nor reach replicas).
-- Not breaking: a new table.
CREATE UNLOGGED TABLE agent_presence (
  namespace text NOT NULL,
  agent_id text NOT NULL,
  coordinator_id text NOT NULL,
  view jsonb NOT NULL,
  seen_at timestamptz NOT NULL DEFAULT now(),
  fresh_until timestamptz NOT NULL,
  PRIMARY KEY (namespace, agent_id)
);
