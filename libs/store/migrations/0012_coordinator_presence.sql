-- Coordinator presence (docs/operations.md "Agents spread across coordinators"):
-- every live coordinator, with how many agent streams it serves, so a
-- coordinator that holds more than its share can ask some of its agents to
-- move (a coordinator with no agent has no agent_presence row, and would be
-- invisible there). Written by the same statement as agent_presence, on the
-- same schedule; current until fresh_until; UNLOGGED for the same reason.
-- Not breaking: a new table.
CREATE UNLOGGED TABLE coordinator_presence (
  coordinator_id text PRIMARY KEY,
  agents integer NOT NULL CHECK (agents >= 0),
  seen_at timestamptz NOT NULL DEFAULT now(),
  fresh_until timestamptz NOT NULL
);
