/**
 * How a lease is named: a job id plus the generation it was claimed with, and
 * (for every write after the claim) the holder that names it.
 */

/** A lease as the agent names it: job id plus the generation it was claimed with. */
export interface LeaseRef {
  jobId: string;
  leaseGeneration: number;
}

/**
 * A lease named by the agent that says it holds it: renewals, outcomes and
 * releases are fenced on the holder too, not only on the generation, so one
 * agent cannot renew, settle or give back another agent's lease (issue: a
 * rogue agent with a valid token completing someone else's job).
 */
export interface HeldLeaseRef extends LeaseRef {
  /** The agent id the lease was granted to (lease_owner). */
  owner: string;
  /** The agent token it was granted to (lease_token); null for a coordinator running with --insecure. */
  tokenId: string | null;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isJobId(value: string): boolean {
  return UUID_RE.test(value);
}

/**
 * A lease reference the statements can bind: a uuid job id and a generation
 * PostgreSQL's bigint can hold. Anything else (a generation of 2^63 from a
 * broken agent) is answered on its own as not found and never reaches a batch
 * statement, where one bad value would fail everybody's renewals.
 */
export function isWellFormed(lease: LeaseRef): boolean {
  return isJobId(lease.jobId) && Number.isSafeInteger(lease.leaseGeneration) && lease.leaseGeneration >= 1;
}

export function leaseKey(jobId: string, generation: number): string {
  return `${jobId.toLowerCase()}#${generation}`;
}

/**
 * A lease as one holder names it: a group-commit flush may name the same
 * lease for its holder and for an agent that is not (refused), and only the
 * holder may hear that its renewal or release was done.
 */
export function heldLeaseKey(jobId: string, generation: number, owner: string, token: string | null): string {
  return `${leaseKey(jobId, generation)}\u0000${owner}\u0000${token?.toLowerCase() ?? ''}`;
}

/** `heldLeaseKey` of a named lease. */
export function heldKeyOf(lease: HeldLeaseRef): string {
  return heldLeaseKey(lease.jobId, lease.leaseGeneration, lease.owner, lease.tokenId);
}
