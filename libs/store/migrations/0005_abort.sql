-- Aborting a running run (POST /jobs/{id}/abort, docs/api.md "Abort").
-- An abort is a request recorded on the CLAIMED job: the coordinators revoke
-- the lease (NOTIFY kairos_abort reaches the one serving the holding agent;
-- every renewal answers it too), the agent stops the handler and reports, and
-- the settlement reads these columns to record the run CANCELLED with who
-- aborted it and to decide the job's next state. They are cleared whenever
-- the job leaves CLAIMED, which the CHECK enforces.
-- runs.aborted_by names who aborted a run (a token's name and id).
-- Not breaking: new nullable columns, a default, a CHECK every row satisfies.
ALTER TABLE jobs
  ADD COLUMN abort_requested_at timestamptz,
  ADD COLUMN abort_requested_by text,
  ADD COLUMN abort_stop_schedule boolean NOT NULL DEFAULT false,
  ADD CONSTRAINT jobs_abort_only_while_claimed CHECK (abort_requested_at IS NULL OR state = 'CLAIMED');

ALTER TABLE runs ADD COLUMN aborted_by text;
