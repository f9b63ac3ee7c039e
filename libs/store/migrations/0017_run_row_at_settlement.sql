-- A run's row is written once, when the run ends (docs/decisions/0027). Until
-- then the run lives on its job row: the claim reserves the run's id from the
-- run sequence and stamps its start (`run_id`, `run_started_at`); its other
-- fields are the CLAIMED job's own (attempt, occurrence_at as scheduled_for,
-- lease_owner as worker_id, next_reason as reason), which nothing changes
-- while the job is CLAIMED. Every ending (completion, expiry, abort, release
-- before start) inserts the finished row under the reserved id. Before, the
-- claim inserted a RUNNING row and the ending updated it: one more row
-- version, one more index probe and one more WAL record per run.
--
-- The table is renamed `ended_runs`; `runs` becomes a view: the ended rows
-- and, for each CLAIMED job, its RUNNING run. Readers are unchanged.
--
-- Breaking for coordinators of earlier versions, on purpose in a way that
-- fails closed: their claim leaves `run_id` unset (refused by
-- jobs_claimed_has_run) and their endings write to `runs`, now a view that
-- cannot be written. So while a rolling upgrade runs, an old coordinator
-- claims nothing and settles nothing (its agents' reports stay pending and
-- are acknowledged once they reach a new coordinator); nothing it does can
-- end a run without its row.
ALTER TABLE jobs ADD COLUMN run_id bigint, ADD COLUMN run_started_at timestamptz;

-- Failures are now inserted finished, not updated from RUNNING: one trigger
-- on insert for both webhook events (kairos_webhook_run tells them apart),
-- created below. The old ones go first: the moves below must queue no
-- deferred trigger event, or the ALTER TABLEs after them are refused.
DROP TRIGGER runs_webhook_failed ON runs;
DROP TRIGGER runs_webhook_missed ON runs;

-- Runs in progress move onto their jobs.
UPDATE jobs j SET run_id = r.id, run_started_at = r.started_at
FROM runs r
WHERE r.outcome = 'RUNNING' AND r.job_id = j.id AND r.lease_generation = j.lease_generation AND j.state = 'CLAIMED';
DELETE FROM runs r USING jobs j
WHERE r.outcome = 'RUNNING' AND r.job_id = j.id AND j.run_id = r.id;
-- A RUNNING row no lease holds any more could only be left by a fault; it is
-- closed, not dropped (no webhook: the fault is older than this upgrade).
UPDATE runs SET outcome = 'LEASE_EXPIRED', finished_at = now(), error = 'lease expired: closed by migration 0017 (no lease held it)'
WHERE outcome = 'RUNNING';

ALTER TABLE runs RENAME TO ended_runs;
ALTER SEQUENCE runs_id_seq RENAME TO ended_runs_id_seq;
ALTER TABLE ended_runs RENAME CONSTRAINT runs_pkey TO ended_runs_pkey;
ALTER TABLE ended_runs RENAME CONSTRAINT runs_generation_matches_outcome TO ended_runs_generation_matches_outcome;
ALTER INDEX runs_job_generation_idx RENAME TO ended_runs_job_generation_idx;
ALTER TABLE ended_runs DROP CONSTRAINT runs_finished_unless_running;
ALTER TABLE ended_runs ALTER COLUMN finished_at SET NOT NULL;
ALTER TABLE ended_runs ADD CONSTRAINT ended_runs_never_running CHECK (outcome <> 'RUNNING');
-- Rows are no longer updated after they are written: pages can be full.
ALTER TABLE ended_runs SET (fillfactor = 100);

CREATE CONSTRAINT TRIGGER ended_runs_webhook AFTER INSERT ON ended_runs
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
WHEN (NEW.outcome IN ('SKIPPED', 'FAILED', 'TIMED_OUT', 'LEASE_EXPIRED') AND NEW.aborted_by IS NULL)
EXECUTE FUNCTION kairos_webhook_run();

CREATE VIEW runs AS
SELECT id, job_id, attempt, lease_generation, scheduled_for, worker_id, started_at, finished_at, outcome, error, aborted_by, reason
FROM ended_runs
UNION ALL
SELECT run_id, id, attempt, lease_generation, occurrence_at, lease_owner, run_started_at, NULL::timestamptz,
       'RUNNING'::kairos_run_outcome, NULL::text, NULL::text, next_reason
FROM jobs
WHERE state = 'CLAIMED';

-- A CLAIMED job always has its run (the view's RUNNING row). The two columns
-- are left as they were when the job leaves CLAIMED: only CLAIMED rows read them.
ALTER TABLE jobs ADD CONSTRAINT jobs_claimed_has_run CHECK (state <> 'CLAIMED' OR (run_id IS NOT NULL AND run_started_at IS NOT NULL));
