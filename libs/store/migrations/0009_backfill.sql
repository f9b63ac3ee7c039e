-- Backfill (POST /jobs/{id}/backfill, docs/api.md "Backfill"): the
-- occurrences of a recurring job's schedule in a past range run in order, one
-- at a time, as a planned stretch (run_through, next_reason 'backfill').
-- backfill_resume_at: the regular occurrence the job was waiting for when the
-- backfill started; when the stretch ends the job resumes from it, and the
-- regular occurrences that passed meanwhile follow the job's policies.
-- Not breaking: one nullable column.
ALTER TABLE jobs ADD COLUMN backfill_resume_at timestamptz;
