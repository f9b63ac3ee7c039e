-- Bearer tokens, and the token a lease was granted to (docs/security.md).
-- Tokens are random secrets shown once; only their SHA-256 is stored, so a
-- read of this table gives nobody a usable credential. A token belongs to one
-- namespace and has one role; it can expire (expires_at) and be revoked
-- (revoked_at, kept for the audit trail: rows are never deleted).
-- jobs.lease_token records which agent token a lease was granted to, so
-- renewals, outcomes and releases are accepted only from that credential
-- (together with lease_owner, the agent id). NULL for leases granted by a
-- coordinator running with --insecure.
-- Not breaking: new table, new nullable column.
CREATE TYPE kairos_token_role AS ENUM ('reader', 'writer', 'admin', 'agent');

CREATE TABLE tokens (
  id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  namespace    text NOT NULL,
  role         kairos_token_role NOT NULL,
  name         text,
  -- hex SHA-256 of the secret; the secret itself is never stored
  secret_hash  text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz,
  revoked_at   timestamptz,
  CONSTRAINT tokens_expiry_after_creation CHECK (expires_at IS NULL OR expires_at > created_at)
);
-- Every authenticated request looks its token up by hash (behind a short cache).
CREATE UNIQUE INDEX tokens_secret_hash_idx ON tokens (secret_hash);

ALTER TABLE jobs ADD COLUMN lease_token uuid;
