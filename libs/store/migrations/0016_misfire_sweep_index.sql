-- The reaper's misfire sweep (lease/settlement.ts skipMisfired) looks for
-- late `catch-up` jobs by occurrence_at. With no index for that test the
-- whole statement was a sequential scan of jobs on every reaper pass: 0.3 to
-- 0.5 s of database CPU at a million jobs (bench, auto_explain), every
-- lease/4. The `skip` half now uses the due index (next_run_at); this index
-- serves the `catch-up` half. Partial: only DUE catch-up jobs with a window,
-- usually few, so other writes do not maintain it.
-- Not breaking: an index. CREATE INDEX (not CONCURRENTLY: migrations run in a
-- transaction) holds off writes to jobs while it scans the table once.
CREATE INDEX jobs_due_catchup_occurrence_idx ON jobs (occurrence_at)
  WHERE state = 'DUE' AND misfire_policy = 'catch-up' AND catchup_window_ms IS NOT NULL;
