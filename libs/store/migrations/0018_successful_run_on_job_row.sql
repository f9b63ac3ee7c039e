-- A one-off job's successful run stays on its job row (docs/decisions/0033).
-- The simple completion (a SUCCEEDED report for a CLAIMED one-off job, the
-- bulk of a busy system's completions) used to update the job row and insert
-- the run's row into ended_runs; it now only updates the job row, stamping
-- the run's end and its worker next to the run's id and start, which the
-- claim already wrote there (migration 0017). The `runs` view lists that run
-- SUCCEEDED from the job row, as it lists a CLAIMED job's run RUNNING.
--
-- COMPLETED is final (no trigger, edit or cancel moves a job out of it), and
-- none of the columns the view reads changes on a COMPLETED job, so the run
-- reads the same for as long as the job exists; retention deletes it with
-- its job. Failures, expiries, aborts, releases, skips and every run of a
-- recurring job are still inserted into ended_runs.
--
-- Compatible both ways during a rolling upgrade: an earlier coordinator's
-- completion inserts into ended_runs and leaves run_finished_at unset, so its
-- runs appear once, from ended_runs.
ALTER TABLE jobs ADD COLUMN run_finished_at timestamptz, ADD COLUMN run_worker_id text;

CREATE OR REPLACE VIEW runs AS
SELECT id, job_id, attempt, lease_generation, scheduled_for, worker_id, started_at, finished_at, outcome, error, aborted_by, reason
FROM ended_runs
UNION ALL
SELECT run_id, id, attempt, lease_generation, occurrence_at, lease_owner, run_started_at, NULL::timestamptz,
       'RUNNING'::kairos_run_outcome, NULL::text, NULL::text, next_reason
FROM jobs
WHERE state = 'CLAIMED'
UNION ALL
SELECT run_id, id, attempt, lease_generation, occurrence_at, run_worker_id, run_started_at, run_finished_at,
       'SUCCEEDED'::kairos_run_outcome, NULL::text, NULL::text, next_reason
FROM jobs
WHERE state = 'COMPLETED' AND run_finished_at IS NOT NULL;
