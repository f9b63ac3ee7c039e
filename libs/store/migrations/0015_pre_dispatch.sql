-- Pre-dispatched leases (docs/decisions/0021-pre-dispatched-leases.md): a
-- coordinator may claim a job a few seconds before it is due and hand it to
-- an agent that starts it at the due instant. Until then a user's cancel,
-- pause or edit asks the holder to give the lease back:
--   withdraw_generation / withdraw_requested_at: the request, on the CLAIMED
--     row, for the lease of that generation (lease/withdraw.ts);
--   held_until: set when the holder gave the lease back for a request: the
--     job is DUE again but no claim takes it before this instant, so the
--     requester's change lands first (bounded: a requester that died only
--     delays the job until then).
-- Not breaking: nullable columns without defaults (no rewrite).
ALTER TABLE jobs ADD COLUMN withdraw_generation bigint;
ALTER TABLE jobs ADD COLUMN withdraw_requested_at timestamptz;
ALTER TABLE jobs ADD COLUMN held_until timestamptz;
