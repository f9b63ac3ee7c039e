-- Tracing (docs/operations.md "Tracing"): the W3C traceparent a job was
-- created under (the caller's, or the coordinator's create span), sent with
-- each of its assignments so the claim, the run and the report of every run
-- join the trace of its creation. NULL for jobs created before, or by a
-- caller that sent none with tracing off.
-- Not breaking: a nullable column without a default (no rewrite).
ALTER TABLE jobs ADD COLUMN trace_parent text;
