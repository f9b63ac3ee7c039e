-- Editing a job in place (PATCH /jobs/{id}, docs/api.md "Editing a job").
-- rescheduled_at: when the schedule of a CLAIMED job was changed. The run in
-- progress keeps its occurrence; when it ends, the next occurrence is planned
-- from this instant under the new schedule (not from the occurrence served,
-- which would count every new-schedule occurrence in between as missed).
-- Cleared once the job moves on to a new occurrence.
-- Not breaking: one nullable column.
ALTER TABLE jobs ADD COLUMN rescheduled_at timestamptz;
