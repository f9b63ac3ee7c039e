-- Payload schemas that SDK handlers declare (defineTask) and agents advertise
-- in their Hello, so every coordinator can check a new job's payload against
-- them at create (docs/api.md "Payload checks"). One row per distinct schema
-- of a task in a namespace: during a rollout the old and the new schema are
-- both known, and a payload either accepts passes. advertised_at moves on
-- every Hello that names the schema; rows not advertised for
-- KAIROS_TASK_SCHEMA_TTL_MS are deleted by the retention loop.
-- Not breaking: a new table.
CREATE TABLE task_schemas (
  namespace text NOT NULL,
  task text NOT NULL,
  schema_hash text NOT NULL,
  json_schema jsonb NOT NULL,
  agent_id text NOT NULL,
  advertised_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (namespace, task, schema_hash)
);
