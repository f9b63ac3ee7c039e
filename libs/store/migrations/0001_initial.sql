-- Kairos schedule store, version 1.
-- Forward-only: a released migration is never edited; add a new numbered file.

CREATE TYPE kairos_job_state AS ENUM ('DUE', 'CLAIMED', 'COMPLETED', 'DEAD', 'PAUSED', 'CANCELLED');
CREATE TYPE kairos_run_outcome AS ENUM (
  'RUNNING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'LEASE_EXPIRED', 'CANCELLED', 'SKIPPED'
);
CREATE TYPE kairos_misfire_policy AS ENUM ('fire-once', 'skip');

CREATE TABLE jobs (
  id               uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  namespace        text NOT NULL DEFAULT 'default',
  name             text,
  task             text NOT NULL,
  -- exactly one of schedule (cron) and run_at (one-off)
  schedule         text,
  run_at           timestamptz,
  timezone         text NOT NULL DEFAULT 'UTC',
  payload          jsonb NOT NULL DEFAULT '{}'::jsonb,
  state            kairos_job_state NOT NULL DEFAULT 'DUE',
  -- the schedule occurrence the pending (or running) attempt serves; retries keep it
  occurrence_at    timestamptz,
  -- when the job may next be claimed: the occurrence, or a retry time after it
  next_run_at      timestamptz,
  lease_until      timestamptz,
  lease_owner      text,
  -- the fencing token: +1 on every claim, never reused
  lease_generation bigint NOT NULL DEFAULT 0,
  -- attempts spent on the current occurrence (a claim spends one)
  attempt          integer NOT NULL DEFAULT 0,
  max_attempts     integer NOT NULL DEFAULT 3,
  timeout_ms       integer,
  misfire_policy   kairos_misfire_policy NOT NULL DEFAULT 'fire-once',
  idempotency_key  text,
  -- digest of the create request, to tell a retried create from a conflicting one
  request_digest   text,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT jobs_schedule_xor_run_at CHECK ((schedule IS NULL) <> (run_at IS NULL)),
  CONSTRAINT jobs_due_has_next_run CHECK (state <> 'DUE' OR (next_run_at IS NOT NULL AND occurrence_at IS NOT NULL)),
  CONSTRAINT jobs_claimed_has_lease CHECK (
    state <> 'CLAIMED' OR (lease_until IS NOT NULL AND lease_owner IS NOT NULL AND lease_generation > 0)
  ),
  CONSTRAINT jobs_attempts_positive CHECK (max_attempts >= 1 AND attempt >= 0),
  CONSTRAINT jobs_timeout_positive CHECK (timeout_ms IS NULL OR timeout_ms > 0)
);

-- The hottest object: every claim reads its head (next_run_at <= now, oldest first).
-- Only DUE rows are indexed, so claimed, finished and paused jobs never cost a claim
-- anything, and a million far-future jobs sit past the part the claim reads.
CREATE INDEX jobs_due_next_run_at_idx ON jobs (next_run_at) WHERE state = 'DUE';
-- The reaper's scan: only leased rows.
CREATE INDEX jobs_claimed_lease_until_idx ON jobs (lease_until) WHERE state = 'CLAIMED';
CREATE UNIQUE INDEX jobs_idempotency_key_idx ON jobs (namespace, idempotency_key) WHERE idempotency_key IS NOT NULL;
-- No index for listing: ids are UUIDv7 (time-ordered), so a page in creation order
-- is a primary-key range scan. Every index here costs a write on each claim and
-- completion (they change `state`, so updates are never HOT); listing is rare.

CREATE TABLE runs (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id           uuid NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
  attempt          integer NOT NULL,
  -- NULL only for SKIPPED rows, which no lease served
  lease_generation bigint,
  scheduled_for    timestamptz NOT NULL,
  worker_id        text,
  started_at       timestamptz,
  finished_at      timestamptz,
  outcome          kairos_run_outcome NOT NULL,
  error            text,
  CONSTRAINT runs_generation_matches_outcome CHECK ((lease_generation IS NULL) = (outcome = 'SKIPPED')),
  CONSTRAINT runs_finished_unless_running CHECK ((outcome = 'RUNNING') = (finished_at IS NULL))
) WITH (fillfactor = 70);
-- Room on each page lets the completion's UPDATE of a run (outcome, finished_at,
-- error: no indexed column) be a HOT update on the page its claim just wrote.


-- One execution per lease: a double claim cannot even be recorded. Also serves
-- "the runs of a job" (a job has few runs; they are sorted after the lookup).
CREATE UNIQUE INDEX runs_job_generation_idx ON runs (job_id, lease_generation);
