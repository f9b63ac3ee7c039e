/**
 * Giving back leases whose handler never started (a draining agent, or an
 * agent that left before its assignment was sent): the job is DUE again and
 * the attempt is not spent. A lease whose run an operator aborted is not
 * handed out again: it is settled as an aborted run (settlement.ts), which is
 * what the operator asked for. A lease given back for a user's withdrawal
 * request (withdraw.ts) is held for that user: DUE, but not claimed before
 * `held_until`.
 */
import type { Pool } from 'pg';
import { heldKeyOf, heldLeaseKey, isWellFormed, type HeldLeaseRef } from './refs';
import { complete } from './settlement';
import { holderArrays, inIdOrder, insertEndedRuns, jobIdIn, lockInIdOrder, NOW, RUN_COLUMNS, truncateError } from './sql';
import { WITHDRAW_HOLD_MS } from './withdraw';

export type ReleaseResult = { kind: 'released' | 'stale' | 'not-owner'; jobId: string; leaseGeneration: number };

/** A lease given back, with the holder's reason when it gave one (else the call's). */
export type ReleasedLease = HeldLeaseRef & { readonly reason?: string };

/**
 * Gives back the named leases not aborted (a lease whose run was aborted is
 * settled by `complete` instead): DUE again, the attempt unspent, each run
 * recorded CANCELLED with its reason ($6, parallel to the arrays; each lease
 * named once). Answers the leases released, with their holders.
 */
export const RELEASE_SQL = `WITH locked AS (${lockInIdOrder(2, 'AND j.abort_requested_at IS NULL', `${RUN_COLUMNS}, j.lease_token`)}), released AS (
  UPDATE jobs j SET state = 'DUE', lease_owner = NULL, lease_token = NULL, lease_until = NULL,
    attempt = j.attempt - 1, updated_at = ${NOW(1)},
    held_until = CASE WHEN j.withdraw_generation = j.lease_generation
      AND j.withdraw_requested_at > ${NOW(1)} - make_interval(secs => ${WITHDRAW_HOLD_MS / 1000})
      THEN ${NOW(1)} + make_interval(secs => ${WITHDRAW_HOLD_MS / 1000}) END,
    withdraw_generation = NULL, withdraw_requested_at = NULL
  WHERE ${jobIdIn('SELECT locked.id FROM locked')}
), recorded AS (
  -- A pre-dispatched run was stamped with its due instant; released, it never started. Its reason is its
  -- holder's: a flush may name the lease for another agent too.
  ${insertEndedRuns('locked', {
    finishedAt: NOW(1),
    outcome: "'CANCELLED'",
    error: 'why.error',
    startedAt: `least(locked.run_started_at, ${NOW(1)})`,
  }, `JOIN unnest($2::uuid[], $3::bigint[], $4::text[], $5::uuid[], $6::text[]) AS why(id, generation, owner, token, error)
    ON why.id = locked.id AND why.generation = locked.lease_generation
      AND why.owner = locked.lease_owner AND why.token IS NOT DISTINCT FROM locked.lease_token`)}
)
-- The UPDATE writes every locked row (the lock is its only condition), and a data-modifying CTE runs whether
-- or not it is read: the released leases are the locked ones, with the holder the UPDATE clears.
SELECT id, lease_generation, lease_owner, lease_token FROM locked`;

/**
 * Gives back `leases`; each released run is CANCELLED with the error
 * "released before start: <reason>", the lease's own reason or else `reason`.
 */
export async function release(pool: Pool, leases: readonly ReleasedLease[], reason: string, now?: Date): Promise<ReleaseResult[]> {
  // Each lease once per holder, in job-id order as holderArrays passes them: the reasons are a parallel
  // array. A lease named twice would be locked twice and its run recorded twice (a constraint violation).
  const keys = leases.map(heldKeyOf);
  const once = new Map<string, ReleasedLease>();
  leases.forEach((lease, index) => {
    if (isWellFormed(lease) && !once.has(keys[index]!)) once.set(keys[index]!, lease);
  });
  const valid = inIdOrder([...once.values()]);
  const errorOf = (lease: ReleasedLease) => truncateError(`released before start: ${lease.reason || reason}`);
  const released = new Set<string>();
  if (valid.length > 0) {
    const { rows } = await pool.query(
      RELEASE_SQL,
      [now ?? null, ...holderArrays(valid), valid.map(errorOf)],
    );
    for (const row of rows) released.add(heldLeaseKey(row.id, Number(row.lease_generation), row.lease_owner, row.lease_token));
  }
  // What the statement above left: aborted runs (settled here, never retried), or leases not held.
  // complete() answers each of them: recorded (settled as aborted), or why it was refused.
  const rest = valid.filter((lease) => !released.has(heldKeyOf(lease)));
  const refused = new Map<string, 'stale' | 'not-owner'>(); // by heldKeyOf
  if (rest.length > 0) {
    const aborted = await complete(
      pool,
      rest.map((lease) => ({ ...lease, outcome: 'CANCELLED' as const, error: errorOf(lease) })),
      {},
      now,
    );
    // One result per report, in order.
    aborted.forEach((result, index) => {
      if (result.kind === 'recorded') released.add(heldKeyOf(rest[index]!));
      else refused.set(heldKeyOf(rest[index]!), result.kind);
    });
  }
  // A malformed lease never reached a statement: 'stale', as `refusal` answers it. A lease named twice by its
  // holder gets the same answer both times.
  return leases.map((lease, index) => ({
    kind: released.has(keys[index]!) ? 'released' : (refused.get(keys[index]!) ?? 'stale'),
    jobId: lease.jobId,
    leaseGeneration: lease.leaseGeneration,
  }));
}
