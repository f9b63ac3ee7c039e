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
import { isWellFormed, leaseKey, type HeldLeaseRef } from './refs';
import { complete } from './settlement';
import { holderArrays, inIdOrder, insertEndedRuns, lockedRows, lockInIdOrder, NOW, RUN_COLUMNS, truncateError } from './sql';
import { WITHDRAW_HOLD_MS } from './withdraw';

export type ReleaseResult = { kind: 'released' | 'stale' | 'not-owner'; jobId: string; leaseGeneration: number };

/** A lease given back, with the holder's reason when it gave one (else the call's). */
export type ReleasedLease = HeldLeaseRef & { readonly reason?: string };

/**
 * Gives back the named leases not aborted (a lease whose run was aborted is
 * settled by `complete` instead): DUE again, the attempt unspent, each run
 * recorded CANCELLED with its reason ($6, parallel to the arrays). Answers the
 * leases released.
 */
export const RELEASE_SQL = `WITH locked AS (${lockInIdOrder(2, 'AND j.abort_requested_at IS NULL', RUN_COLUMNS)}), released AS (
  UPDATE jobs j SET state = 'DUE', lease_owner = NULL, lease_token = NULL, lease_until = NULL,
    attempt = j.attempt - 1, updated_at = ${NOW(1)},
    held_until = CASE WHEN j.withdraw_generation = j.lease_generation
      AND j.withdraw_requested_at > ${NOW(1)} - make_interval(secs => ${WITHDRAW_HOLD_MS / 1000})
      THEN ${NOW(1)} + make_interval(secs => ${WITHDRAW_HOLD_MS / 1000}) END,
    withdraw_generation = NULL, withdraw_requested_at = NULL
  WHERE ${lockedRows('locked')}
  RETURNING j.id, j.lease_generation
), recorded AS (
  -- A pre-dispatched run was stamped with its due instant; released, it never started.
  ${insertEndedRuns('locked', {
    finishedAt: NOW(1),
    outcome: "'CANCELLED'",
    error: 'why.error',
    startedAt: `least(locked.run_started_at, ${NOW(1)})`,
  }, 'JOIN unnest($2::uuid[], $3::bigint[], $6::text[]) AS why(id, generation, error) ON why.id = locked.id AND why.generation = locked.lease_generation')}
)
SELECT id, lease_generation FROM released`;

/**
 * Gives back `leases`; each released run is CANCELLED with the error
 * "released before start: <reason>", the lease's own reason or else `reason`.
 */
export async function release(pool: Pool, leases: readonly ReleasedLease[], reason: string, now?: Date): Promise<ReleaseResult[]> {
  // In job-id order, as holderArrays passes them: the reasons are a parallel array.
  const valid = inIdOrder(leases.filter(isWellFormed));
  const errorOf = (lease: ReleasedLease) => truncateError(`released before start: ${lease.reason || reason}`);
  const released = new Set<string>();
  if (valid.length > 0) {
    const { rows } = await pool.query(
      RELEASE_SQL,
      [now ?? null, ...holderArrays(valid), valid.map(errorOf)],
    );
    for (const row of rows) released.add(leaseKey(row.id, Number(row.lease_generation)));
  }
  // What the statement above left: aborted runs (settled here, never retried), or leases not held.
  // complete() answers each of them: recorded (settled as aborted), or why it was refused.
  const rest = valid.filter((lease) => !released.has(leaseKey(lease.jobId, lease.leaseGeneration)));
  const refused = new Map<HeldLeaseRef, 'stale' | 'not-owner'>(); // keyed by the caller's objects (rest holds them)
  if (rest.length > 0) {
    const aborted = await complete(
      pool,
      rest.map((lease) => ({ ...lease, outcome: 'CANCELLED' as const, error: errorOf(lease) })),
      {},
      now,
    );
    // One result per report, in order. A lease named twice is released if either report settled it.
    aborted.forEach((result, index) => {
      if (result.kind === 'recorded') released.add(leaseKey(result.jobId, result.leaseGeneration));
      else refused.set(rest[index]!, result.kind);
    });
  }
  // A malformed lease never reached a statement: 'stale', as `refusal` answers it.
  return leases.map((lease) => ({
    kind: released.has(leaseKey(lease.jobId, lease.leaseGeneration)) ? 'released' : (refused.get(lease) ?? 'stale'),
    jobId: lease.jobId,
    leaseGeneration: lease.leaseGeneration,
  }));
}
