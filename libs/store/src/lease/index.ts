/**
 * Every statement that claims, renews, completes, releases, withdraws, cancels, aborts,
 * edits, pauses, resumes, triggers or reaps a job. Nothing else in Kairos writes `jobs.state`
 * after creation. The protocol is described in ../../README.md ("Lease protocol");
 * the short version:
 *
 * - A lease is identified by (job id, lease_generation). The database row is the
 *   only authority; the generation is bumped by every claim and never reused, so
 *   it doubles as the fencing token handed to handlers.
 * - Every write after a claim is conditioned on `state = 'CLAIMED' AND
 *   lease_generation = $gen`. Zero rows is an outcome (`stale`/`lost`), never an
 *   error and never a partial write.
 * - The database clock decides. Each function takes an optional `now` that
 *   replaces `now()` in SQL, so tests can pin time; production passes nothing.
 * - Batches are the rule: claim, renew, complete and release take many leases
 *   per call and commit once, so durable commits per job stay well below one.
 */
import type { Pool } from 'pg';
import { storeCall } from '../pg-errors';
import type { RetryPolicy } from '../settle';
import { claimDue, type ClaimedJob, type ClaimRequest } from './claim';
import { requestAbort, type AbortRequestInput, type AbortResult } from './abort';
import { cancelBackfill, startBackfill, type BackfillResult, type CancelBackfillResult } from './backfill';
import { editJob, type EditResult, type JobEdit } from './edit';
import { cancel, pause, resume, trigger, type CancelResult, type ControlResult } from './control';
import { release, type ReleasedLease, type ReleaseResult } from './release';
import type { HeldLeaseRef } from './refs';
import { renew, type RenewResult } from './renew';
import { awaitWithdrawal, refuseWithdraw, releaseHold, requestWithdraw, type WithdrawOutcome, type WithdrawRequest } from './withdraw';
import { abortOverlapped, complete, reapExpired, skipMisfired, type CompleteResult, type CompletionReport, type ReapResult } from './settlement';

export { CLAIM_SQL, DEFAULT_MISFIRE_THRESHOLD_MS, type ClaimedJob, type ClaimRequest } from './claim';
export { COMPLETE_SIMPLE_SQL, EXPIRED_SQL, LOCK_ENDINGS_SQL, MISFIRED_SQL, OVERLAPPED_SQL, SETTLE_JOBS_SQL } from './settlement';
export { RELEASE_SQL } from './release';
export { REFUSE_WITHDRAW_SQL } from './withdraw';
export { RENEW_SQL } from './renew';
export type { AbortRequestInput, AbortResult } from './abort';
export type { CancelResult, ControlResult } from './control';
export type { EditResult, JobEdit } from './edit';
export { MAX_BACKFILL_OCCURRENCES, type BackfillResult, type CancelBackfillResult } from './backfill';
export { isJobId, type HeldLeaseRef, type LeaseRef } from './refs';
export type { ReleasedLease, ReleaseResult } from './release';
export { WITHDRAW_HOLD_MS, type WithdrawOutcome, type WithdrawRequest } from './withdraw';
export { DEFAULT_ABORT_GRACE_MS, type LeaseLostReason, type RenewResult } from './renew';
export type { CompleteResult, CompletionReport, ReapResult } from './settlement';
export { MAX_ERROR_CHARS, heldLeases, holderArrays } from './sql';

export interface LeaseStatements {
  claimDue(request: ClaimRequest): Promise<ClaimedJob[]>;
  /** `abortGraceMs`: how far past an abort request an aborted lease may still be extended (renew.ts). */
  renew(leases: readonly HeldLeaseRef[], leaseMs: number, now?: Date, abortGraceMs?: number): Promise<RenewResult[]>;
  complete(reports: readonly CompletionReport[], now?: Date): Promise<CompleteResult[]>;
  release(leases: readonly ReleasedLease[], reason: string, now?: Date): Promise<ReleaseResult[]>;
  reapExpired(options?: { limit?: number; now?: Date }): Promise<ReapResult>;
  /** `skipped`: jobs moved on; `occurrences`: runs recorded SKIPPED. */
  skipMisfired(options?: { thresholdMs?: number; limit?: number; now?: Date }): Promise<{ skipped: number; occurrences: number }>;
  /** Aborts the runs of `cancel-other` jobs whose next occurrence has come due (settlement.ts). */
  abortOverlapped(options?: { limit?: number; now?: Date }): Promise<{ aborted: number }>;
  cancel(namespace: string, jobId: string, now?: Date): Promise<CancelResult>;
  /** Changes a job's settings in place, under its row lock (edit.ts). */
  edit(namespace: string, jobId: string, edit: JobEdit, options?: { expectedVersion?: number; now?: Date }): Promise<EditResult>;
  /** Runs a recurring job's occurrences in [from, to) in order (backfill.ts). */
  startBackfill(namespace: string, jobId: string, range: { from: Date; to: Date }, now?: Date): Promise<BackfillResult>;
  cancelBackfill(namespace: string, jobId: string, now?: Date): Promise<CancelBackfillResult>;
  /** Asks the holder of a CLAIMED job's lease to stop the run (abort.ts). */
  abort(namespace: string, jobId: string, input: AbortRequestInput, now?: Date): Promise<AbortResult>;
  pause(namespace: string, jobId: string, now?: Date): Promise<ControlResult>;
  resume(namespace: string, jobId: string, now?: Date): Promise<ControlResult>;
  trigger(namespace: string, jobId: string, now?: Date): Promise<ControlResult>;
  /** Asks the holder of a pre-dispatched lease to give it back before it starts (withdraw.ts). */
  requestWithdraw(namespace: string, jobId: string, now?: Date): Promise<WithdrawRequest>;
  /** Waits at most `timeoutMs` for the holder's answer; retracts the request if none came. */
  awaitWithdrawal(jobId: string, leaseGeneration: number, timeoutMs: number, now?: Date): Promise<WithdrawOutcome>;
  /** The holder keeps these leases (started): their withdrawal requests end. */
  refuseWithdraw(leases: readonly HeldLeaseRef[]): Promise<number>;
  /** Ends a withdrawn job's hold early (the requester's change did not apply). */
  releaseHold(namespace: string, jobId: string): Promise<void>;
}

export function leaseStatements(pool: Pool, retry: RetryPolicy = {}): LeaseStatements {
  return {
    claimDue: (request) => guard('claimDue', () => claimDue(pool, request)),
    renew: (leases, leaseMs, now, abortGraceMs) => guard('renew', () => renew(pool, leases, leaseMs, now, abortGraceMs)),
    complete: (reports, now) => guard('complete', () => complete(pool, reports, retry, now)),
    release: (leases, reason, now) => guard('release', () => release(pool, leases, reason, now)),
    reapExpired: (options) => guard('reapExpired', () => reapExpired(pool, retry, options)),
    skipMisfired: (options) => guard('skipMisfired', () => skipMisfired(pool, options)),
    abortOverlapped: (options) => guard('abortOverlapped', () => abortOverlapped(pool, options)),
    cancel: (namespace, jobId, now) => guard('cancel', () => cancel(pool, namespace, jobId, now)),
    edit: (namespace, jobId, edit, options) => guard('edit', () => editJob(pool, namespace, jobId, edit, options)),
    startBackfill: (namespace, jobId, range, now) => guard('startBackfill', () => startBackfill(pool, namespace, jobId, range, now)),
    cancelBackfill: (namespace, jobId, now) => guard('cancelBackfill', () => cancelBackfill(pool, namespace, jobId, now)),
    abort: (namespace, jobId, input, now) => guard('abort', () => requestAbort(pool, namespace, jobId, input, now)),
    pause: (namespace, jobId, now) => guard('pause', () => pause(pool, namespace, jobId, now)),
    resume: (namespace, jobId, now) => guard('resume', () => resume(pool, namespace, jobId, now)),
    trigger: (namespace, jobId, now) => guard('trigger', () => trigger(pool, namespace, jobId, now)),
    requestWithdraw: (namespace, jobId, now) => guard('requestWithdraw', () => requestWithdraw(pool, namespace, jobId, now)),
    awaitWithdrawal: (jobId, generation, timeoutMs, now) => guard('awaitWithdrawal', () => awaitWithdrawal(pool, jobId, generation, timeoutMs, now)),
    refuseWithdraw: (leases) => guard('refuseWithdraw', () => refuseWithdraw(pool, leases)),
    releaseHold: (namespace, jobId) => guard('releaseHold', () => releaseHold(pool, namespace, jobId)),
  };
}

function guard<T>(context: string, run: () => Promise<T>): Promise<T> {
  return storeCall(`lease.${context}`, run);
}
