/**
 * Renewal: one statement for a whole heartbeat (or a group-commit flush of
 * many heartbeats), fenced on generation and holder.
 */
import type { Pool } from 'pg';
import { heldKeyOf, heldLeaseKey, isWellFormed, type HeldLeaseRef } from './refs';
import { currentHolders, heldJobsByKey, holderArrays, isForeign, jobIdIn, lockInIdOrder, NOW } from './sql';

/** `not-owner`: the lease exists but was granted to another agent or token (refused, changes nothing). */
export type LeaseLostReason = 'stale-generation' | 'expired' | 'not-found' | 'not-owner';

export type RenewResult =
  | {
      kind: 'renewed';
      jobId: string;
      leaseGeneration: number;
      remainingMs: number;
      /** An operator aborted the run (abort.ts): the holder must stop it and report. */
      abortRequested: boolean;
    }
  | { kind: 'lost'; jobId: string; leaseGeneration: number; reason: LeaseLostReason };

/**
 * One statement for a whole heartbeat. A lease is renewed only if the row is
 * still CLAIMED with the same generation: a lease that expired but was not yet
 * reaped is renewed too, which is safe because nobody else can hold it until
 * the generation moves. The remaining time is computed by the database and
 * returned as a duration, so the agent never compares its clock with ours.
 *
 * A lease claimed or renewed within the last sixth of its length (FRESH_SHARE)
 * is only read, not written: answered with the time it has left, its row
 * untouched. Nothing but its holder can change such a lease meanwhile (a
 * takeover needs it expired; an abort request makes it not fresh), so the
 * answer needs no lock. Heartbeats at the normal interval (lease/3) always
 * find it older and extend it; the ones this spares are those soon after a
 * claim, a spike's thousands of pre-dispatched leases or the clock readings
 * an agent takes right after connecting, which would otherwise rewrite every
 * held row (a new row version and index entry each) for nothing.
 *
 * An aborted lease (abort.ts) is extended no further than the abort request
 * plus `abortGraceMs`: its holder has that long to stop the handler and
 * report. Past it the lease is left to run out (0 ms left, which the agent
 * treats as lost) and the reaper settles the run.
 */
const FRESH_SHARE = 6;
/** Of a row: its lease is fresh. Both CTEs below test it on the same snapshot, so they split the named leases between them. */
const FRESH = `(j.abort_requested_at IS NULL
    AND j.lease_until > ${NOW(1)} + make_interval(secs => $2::double precision * ${FRESH_SHARE - 1} / ${FRESH_SHARE} / 1000))`;
const REMAINING_MS = `greatest(0, floor(extract(epoch FROM (j.lease_until - ${NOW(1)})) * 1000))::bigint`;
export const RENEW_SQL = `
WITH fresh AS (
  SELECT j.id, j.lease_generation, j.lease_owner, j.lease_token, ${REMAINING_MS} AS remaining_ms FROM ${heldJobsByKey(4, `AND ${FRESH}`)}
), locked AS (${lockInIdOrder(4, `AND ${FRESH} IS NOT TRUE`)}
), renewed AS (
  UPDATE jobs j SET
    lease_until = CASE WHEN j.abort_requested_at IS NULL
      THEN ${NOW(1)} + make_interval(secs => $2::double precision / 1000)
      ELSE GREATEST(j.lease_until, LEAST(${NOW(1)} + make_interval(secs => $2::double precision / 1000),
                                         j.abort_requested_at + make_interval(secs => $3::double precision / 1000)))
    END,
    updated_at = ${NOW(1)}
  WHERE ${jobIdIn('SELECT locked.id FROM locked')}
  RETURNING j.id, j.lease_generation, j.lease_owner, j.lease_token, j.abort_requested_at IS NOT NULL AS abort_requested,
    ${REMAINING_MS} AS remaining_ms
)
SELECT id, lease_generation, lease_owner, lease_token, abort_requested, remaining_ms FROM renewed
UNION ALL
SELECT id, lease_generation, lease_owner, lease_token, false, remaining_ms FROM fresh`;

/** Default for `abortGraceMs`: how long the holder of an aborted lease keeps it to stop the handler. */
export const DEFAULT_ABORT_GRACE_MS = 30_000;

export async function renew(
  pool: Pool,
  leases: readonly HeldLeaseRef[],
  leaseMs: number,
  now?: Date,
  abortGraceMs: number = DEFAULT_ABORT_GRACE_MS,
): Promise<RenewResult[]> {
  const valid = leases.filter(isWellFormed);
  const renewed = new Map<string, { remainingMs: number; abortRequested: boolean }>();
  if (valid.length > 0) {
    const { rows } = await pool.query({ name: 'kairos_renew', text: RENEW_SQL, values: [now ?? null, leaseMs, abortGraceMs, ...holderArrays(valid)] });
    for (const row of rows) {
      renewed.set(heldLeaseKey(row.id, Number(row.lease_generation), row.lease_owner, row.lease_token), {
        remainingMs: Number(row.remaining_ms),
        abortRequested: row.abort_requested,
      });
    }
  }
  // A renewed row's key includes its holder (heldLeaseKey): only the holder may hear `renewed`.
  const keys = leases.map(heldKeyOf);
  const lostIds = leases.filter((_, index) => !renewed.has(keys[index]!));
  const current = await currentHolders(pool, lostIds);
  return leases.map((lease, index): RenewResult => {
    const { jobId, leaseGeneration } = lease;
    const held = renewed.get(keys[index]!);
    if (held !== undefined) return { kind: 'renewed', jobId, leaseGeneration, ...held };
    const row = isWellFormed(lease) ? current.get(jobId.toLowerCase()) : undefined;
    const reason: LeaseLostReason =
      row === undefined
        ? 'not-found'
        : row.generation !== leaseGeneration
          ? 'stale-generation'
          : isForeign(row, lease)
            ? 'not-owner'
            : 'expired';
    return { kind: 'lost', jobId, leaseGeneration, reason };
  });
}
