-- Failure notifications (docs/api.md "Webhooks"): endpoints per namespace
-- (optionally per job) and an outbox of deliveries. Deliveries are written by
-- triggers in the transaction that records the event, so an event is never
-- lost to a crash between recording it and queueing its notification, and
-- coordinators send them at least once, retrying with backoff.
--
-- Events:
--   job.dead             a job went DEAD (attempts exhausted; a person should look)
--   occurrence.failed    the last allowed attempt of an occurrence ended FAILED,
--                        TIMED_OUT or LEASE_EXPIRED (not an operator's abort)
--   occurrence.missed    an occurrence was recorded SKIPPED (misfire or overlap policy)
--
-- The triggers' WHEN clauses are evaluated without calling the function, so a
-- run that succeeds (the common case) costs nothing more than before. They are
-- deferred to the commit, so the event describes the job and its runs as the
-- transaction left them (a job goes DEAD in one statement and its run is
-- closed in the next).
-- Not breaking: new tables and triggers.
CREATE TABLE webhooks (
  id uuid PRIMARY KEY,
  namespace text NOT NULL,
  url text NOT NULL,
  -- The HMAC-SHA256 key deliveries are signed with (shown once, at creation).
  secret text NOT NULL,
  events text[] NOT NULL CHECK (events <> '{}' AND events <@ ARRAY['job.dead', 'occurrence.failed', 'occurrence.missed']),
  -- Only this job's events; NULL: every job of the namespace.
  job_id uuid,
  description text,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_namespace_idx ON webhooks (namespace);

CREATE TABLE webhook_deliveries (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  webhook_id uuid NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  namespace text NOT NULL,
  event text NOT NULL,
  job_id uuid NOT NULL,
  run_id bigint,
  -- The event as sent (without the delivery's own fields).
  body jsonb NOT NULL,
  state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  -- A coordinator sending it holds it until then; past it, another may retry.
  locked_until timestamptz,
  last_status integer,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  delivered_at timestamptz
);
CREATE INDEX webhook_deliveries_pending_idx ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, id);

-- Queues one delivery per webhook of the job's namespace that wants `event`.
CREATE FUNCTION kairos_queue_webhook(p_event text, p_job_id uuid, p_run_id bigint, p_details jsonb) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  j record;
BEGIN
  SELECT id, namespace, name, task, schedule, state, attempt, max_attempts INTO j FROM jobs WHERE id = p_job_id;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  INSERT INTO webhook_deliveries (webhook_id, namespace, event, job_id, run_id, body)
  SELECT w.id, j.namespace, p_event, j.id, p_run_id,
         jsonb_build_object(
           'event', p_event,
           'occurredAt', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
           'namespace', j.namespace,
           'job', jsonb_build_object('id', j.id, 'name', j.name, 'task', j.task, 'schedule', j.schedule,
                                     'state', j.state, 'maxAttempts', j.max_attempts)
         ) || p_details
  FROM webhooks w
  WHERE w.namespace = j.namespace AND p_event = ANY (w.events) AND (w.job_id IS NULL OR w.job_id = j.id);
END;
$$;

CREATE FUNCTION kairos_webhook_job_dead() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- The run that ended it (closed by the same transaction: the trigger runs at its commit).
  PERFORM kairos_queue_webhook('job.dead', NEW.id, NULL, jsonb_build_object('lastRun', (
    SELECT jsonb_build_object('id', r.id, 'attempt', r.attempt, 'outcome', r.outcome, 'error', r.error)
    FROM runs r WHERE r.job_id = NEW.id ORDER BY r.id DESC LIMIT 1)));
  RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER jobs_webhook_dead AFTER UPDATE OF state ON jobs
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.state = 'DEAD' AND OLD.state IS DISTINCT FROM 'DEAD')
EXECUTE FUNCTION kairos_webhook_job_dead();

CREATE FUNCTION kairos_webhook_run() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  details jsonb;
BEGIN
  details := jsonb_build_object('run', jsonb_build_object(
    'id', NEW.id, 'attempt', NEW.attempt, 'outcome', NEW.outcome, 'scheduledFor',
    to_char(NEW.scheduled_for AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    'workerId', NEW.worker_id, 'leaseGeneration', NEW.lease_generation, 'error', NEW.error, 'reason', NEW.reason));
  IF NEW.outcome = 'SKIPPED' THEN
    PERFORM kairos_queue_webhook('occurrence.missed', NEW.job_id, NEW.id, details);
  ELSIF NEW.attempt >= (SELECT max_attempts FROM jobs WHERE id = NEW.job_id) THEN
    PERFORM kairos_queue_webhook('occurrence.failed', NEW.job_id, NEW.id, details);
  END IF;
  RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER runs_webhook_missed AFTER INSERT ON runs
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.outcome = 'SKIPPED')
EXECUTE FUNCTION kairos_webhook_run();

CREATE CONSTRAINT TRIGGER runs_webhook_failed AFTER UPDATE OF outcome ON runs
DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.outcome IN ('FAILED', 'TIMED_OUT', 'LEASE_EXPIRED') AND OLD.outcome = 'RUNNING' AND NEW.aborted_by IS NULL)
EXECUTE FUNCTION kairos_webhook_run();
