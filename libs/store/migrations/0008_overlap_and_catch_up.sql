-- Overlap policies and the catch-up misfire policy (docs/api.md "Recurring
-- jobs"), and the ledger's reasons.
-- overlap_policy: what happens to occurrences that come due while the job's
-- own run is still running (skip, buffer-one, buffer-all, cancel-other).
-- catchup_window_ms: catch-up runs missed occurrences no older than this.
-- run_through / decided_through / next_reason / busy_since: a planned stretch
-- of occurrences to run in order (catch-up, buffer-all), how far the last plan
-- decided (so nothing is skipped twice), why the next run runs (copied to
-- runs.reason at the claim), and since when the job has been running runs
-- back to back (what comes due from then on overlaps them).
-- runs.reason: the policy that decided a run or a SKIPPED row, e.g.
-- 'misfire:catch-up', 'overlap:skip'; NULL for a run on time.
-- Not breaking: a new enum value, new columns with defaults or NULL.
CREATE TYPE kairos_overlap_policy AS ENUM ('skip', 'buffer-one', 'buffer-all', 'cancel-other');
ALTER TYPE kairos_misfire_policy ADD VALUE 'catch-up';

ALTER TABLE jobs
  ADD COLUMN overlap_policy kairos_overlap_policy NOT NULL DEFAULT 'skip',
  ADD COLUMN catchup_window_ms bigint,
  ADD COLUMN run_through timestamptz,
  ADD COLUMN decided_through timestamptz,
  ADD COLUMN next_reason text,
  ADD COLUMN busy_since timestamptz,
  ADD CONSTRAINT jobs_catchup_window_positive CHECK (catchup_window_ms IS NULL OR catchup_window_ms > 0);

ALTER TABLE runs ADD COLUMN reason text;
