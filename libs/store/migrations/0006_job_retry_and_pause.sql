-- Per-job retry policy, start jitter, pause on failure, and a version for
-- optimistic concurrency (docs/api.md "Retries", "Editing a job").
-- retry_*: NULL means the coordinator's default (KAIROS_RETRY_BASE_MS, _CAP_MS,
-- multiplier 2, no jitter), so existing jobs keep today's behaviour.
-- start_jitter_ms: a recurring job's occurrences start up to this much later,
-- by a fraction fixed per job and occurrence (runs keep the true occurrence in
-- scheduled_for).
-- pause_on_failure: a recurring job whose occurrence exhausts its attempts is
-- PAUSED (paused_reason says why) instead of going on to the next one.
-- version: grows by one on every edit (PATCH /jobs/{id}), never on scheduling
-- changes; it is the ETag.
-- Not breaking: nullable columns, and NOT NULL ones with defaults.
ALTER TABLE jobs
  ADD COLUMN retry_initial_ms integer,
  ADD COLUMN retry_max_ms integer,
  ADD COLUMN retry_multiplier double precision,
  ADD COLUMN retry_jitter double precision,
  ADD COLUMN start_jitter_ms integer NOT NULL DEFAULT 0,
  ADD COLUMN pause_on_failure boolean NOT NULL DEFAULT false,
  ADD COLUMN paused_reason text,
  ADD COLUMN version integer NOT NULL DEFAULT 1,
  ADD CONSTRAINT jobs_retry_sane CHECK (
    (retry_initial_ms IS NULL OR retry_initial_ms >= 0)
    AND (retry_max_ms IS NULL OR retry_max_ms >= 0)
    AND (retry_multiplier IS NULL OR retry_multiplier >= 1)
    AND (retry_jitter IS NULL OR (retry_jitter >= 0 AND retry_jitter <= 1))
    AND start_jitter_ms >= 0),
  ADD CONSTRAINT jobs_paused_reason_only_when_paused CHECK (paused_reason IS NULL OR state = 'PAUSED');
