/**
 * Taking back a pre-dispatched lease before its run starts, so that a user's
 * cancel, pause or edit of a job due in a moment means what it says
 * (docs/decisions/0021-pre-dispatched-leases.md).
 *
 * A pre-dispatched job is CLAIMED while its due instant is still ahead: its
 * agent holds it and will start it then. Only the agent knows whether it has
 * started, so the database cannot decide alone. The protocol:
 *
 * 1. `requestWithdraw` marks the CLAIMED row (withdraw_generation = the
 *    lease's generation, withdraw_requested_at = now) if it is still ahead of
 *    its due instant, and notifies `kairos_withdraw` in the same statement;
 *    the coordinator serving the holder sends it a Withdraw.
 * 2. The agent answers with Release if the handler has not started (it will
 *    never start it): the release (release.ts) puts the job back to DUE and,
 *    because the request is there and fresh, holds it (`held_until`) so no
 *    claim takes it before the requester's change lands. Or it answers
 *    WithdrawRefused (started): `refuseWithdraw` clears the request.
 * 3. `awaitWithdrawal` polls the row until one of those happened, or retracts
 *    the request when its wait runs out (fenced: only if still unanswered).
 *    Row locks order the retraction and the release, so exactly one wins: a
 *    release after the retraction is a plain release (the job runs as usual),
 *    a retraction after the release finds nothing and the caller sees the hold.
 *
 * The requester then applies its change to the DUE job with the ordinary
 * statements (cancel, pause, edit), which clear the hold. A requester that
 * dies in between only delays the job until the hold ends.
 */
import type { Pool } from 'pg';
import { WITHDRAW_CHANNEL } from '../notifications';
import { isJobId, isWellFormed, type HeldLeaseRef } from './refs';
import { holderArrays, jobIdIn, lockInIdOrder, NOW } from './sql';

/** How fresh a request must be for a release to honour it, and how long the job is then held for the requester. */
export const WITHDRAW_HOLD_MS = 5_000;

export type WithdrawRequest =
  | { kind: 'requested'; leaseGeneration: number; leaseOwner: string | null }
  /** Not CLAIMED ahead of its due instant (running, or no longer claimed): nothing to withdraw. */
  | { kind: 'not-pre-dispatched' };

/** How a withdrawal ended. */
export type WithdrawOutcome =
  /** The holder gave the lease back: the job is DUE and held for the requester. */
  | 'withdrawn'
  /** The holder had started the run (or does not hold the lease): it keeps it. */
  | 'refused'
  /** The job moved on otherwise (the lease expired, the run finished): read it again. */
  | 'moved'
  /** No answer in time: the request was retracted, the run goes ahead as claimed. */
  | 'timed-out';

export async function requestWithdraw(pool: Pool, namespace: string, jobId: string, now?: Date): Promise<WithdrawRequest> {
  if (!isJobId(jobId)) return { kind: 'not-pre-dispatched' };
  const { rows } = await pool.query(
    `UPDATE jobs SET withdraw_generation = lease_generation, withdraw_requested_at = ${NOW(1)}
     WHERE id = $2 AND namespace = $3 AND state = 'CLAIMED' AND next_run_at > ${NOW(1)} AND abort_requested_at IS NULL
     RETURNING lease_generation, lease_owner, pg_notify('${WITHDRAW_CHANNEL}', id || ':' || lease_generation)::text AS notified`,
    [now ?? null, jobId, namespace],
  );
  const row = rows[0];
  return row === undefined
    ? { kind: 'not-pre-dispatched' }
    : { kind: 'requested', leaseGeneration: Number(row.lease_generation), leaseOwner: row.lease_owner };
}

/**
 * Waits (polling the row, 5 ms growing to 50 ms) until the holder answered the
 * request for lease (jobId, generation), or `timeoutMs` passed; then retracts
 * an unanswered request.
 */
export async function awaitWithdrawal(pool: Pool, jobId: string, generation: number, timeoutMs: number, now?: Date): Promise<WithdrawOutcome> {
  const deadline = performance.now() + timeoutMs;
  let delayMs = 5;
  for (;;) {
    const outcome = await readWithdrawal(pool, jobId, generation, now);
    if (outcome !== 'pending') return outcome;
    const leftMs = deadline - performance.now();
    if (leftMs <= 0) break;
    await new Promise((resolve) => setTimeout(resolve, Math.min(delayMs, leftMs)));
    delayMs = Math.min(50, delayMs * 2);
  }
  const retracted = await pool.query(
    `UPDATE jobs SET withdraw_generation = NULL, withdraw_requested_at = NULL
     WHERE id = $1 AND state = 'CLAIMED' AND lease_generation = $2 AND withdraw_generation = $2 RETURNING id`,
    [jobId, generation],
  );
  if (retracted.rowCount === 1) return 'timed-out';
  const outcome = await readWithdrawal(pool, jobId, generation, now);
  return outcome === 'pending' ? 'refused' : outcome;
}

async function readWithdrawal(pool: Pool, jobId: string, generation: number, now?: Date): Promise<WithdrawOutcome | 'pending'> {
  const { rows } = await pool.query(
    `SELECT state, lease_generation, withdraw_generation, coalesce(held_until > ${NOW(1)}, false) AS held FROM jobs WHERE id = $2`,
    [now ?? null, jobId],
  );
  const row = rows[0];
  if (row === undefined) return 'moved';
  const sameLease = Number(row.lease_generation) === generation;
  if (row.state === 'DUE' && row.held && sameLease) return 'withdrawn';
  if (row.state === 'CLAIMED' && sameLease) return row.withdraw_generation === null ? 'refused' : 'pending';
  return 'moved';
}

/** Ends the withdrawal requests of the named leases, fenced on the holder. */
export const REFUSE_WITHDRAW_SQL = `WITH locked AS (${lockInIdOrder(1)})
UPDATE jobs j SET withdraw_generation = NULL, withdraw_requested_at = NULL
WHERE ${jobIdIn('SELECT locked.id FROM locked')} AND j.withdraw_generation = j.lease_generation`;

/** The holder keeps these leases (their runs started): their requests end. Fenced on the holder. */
export async function refuseWithdraw(pool: Pool, leases: readonly HeldLeaseRef[]): Promise<number> {
  const valid = leases.filter(isWellFormed);
  if (valid.length === 0) return 0;
  const { rowCount } = await pool.query(REFUSE_WITHDRAW_SQL, holderArrays(valid));
  return rowCount ?? 0;
}

/** Ends a hold early (the requester's change was refused): the job may be claimed at once. */
export async function releaseHold(pool: Pool, namespace: string, jobId: string): Promise<void> {
  if (!isJobId(jobId)) return;
  // Naming next_run_at fires the due trigger (migration 0002), which wakes every dispatcher.
  await pool.query(
    `UPDATE jobs SET held_until = NULL, next_run_at = next_run_at WHERE id = $1 AND namespace = $2 AND held_until IS NOT NULL`,
    [jobId, namespace],
  );
}
