-- Wake dispatchers when a job becomes due sooner than they may expect:
-- created, retried, released, triggered, resumed or moved to its next occurrence.
-- The payload is constant, so PostgreSQL folds all notifications of one
-- transaction into one: a bulk insert of 100,000 jobs wakes each listener once.
CREATE FUNCTION kairos_notify_due() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('kairos_due', '');
  RETURN NULL;
END;
$$;

CREATE TRIGGER jobs_notify_due
  AFTER INSERT OR UPDATE OF state, next_run_at ON jobs
  FOR EACH ROW WHEN (NEW.state = 'DUE')
  EXECUTE FUNCTION kairos_notify_due();
