/**
 * Lease keeper: the agent's record of the leases it holds and how long it may
 * trust each one.
 *
 * Authority
 *   The database row is the only authority on a lease; the coordinator speaks
 *   for it. This module is the agent's conservative *estimate* of that
 *   authority, used for one purpose: to stop working on a lease before the
 *   database could have given it to someone else (the self-fence). It lives in
 *   the session thread, next to the stream, so a handler that hogs the main
 *   thread cannot delay renewals or the fence (see docs/decisions/0005-renewal-off-the-handler-thread.md).
 *   It does no I/O and reads no clock: callers pass monotonic `now` readings
 *   (`performance.now()` of the session thread), which keeps it unit-testable.
 *
 * Identity
 *   A lease is (job id, generation). The same job at another generation is a
 *   different lease; an older generation can never become valid again.
 *
 * Phases (tagged union `LeasePhase`, one per held lease)
 *
 *     confirming ──renewed──> offered ──started──> running ──outcome──> finished ──ack──> (forgotten)
 *        │    └──renewed, start ahead──> waiting ──start instant──> offered
 *        │                       │                    │                    │
 *        ├─lost / not renewed in time──> (forgotten; never offered)
 *        └─aborted by an operator──> finished (CANCELLED, never offered)
 *                                └─release──> (forgotten; sent as Release, never started)
 *                                └────────────────────┴────lost / revoke / trust runs out──> (forgotten)
 *
 *   - confirming: assigned, but the heartbeat it is anchored at is so old (or
 *               unknown) that the window left is shorter than the margin, e.g.
 *               the claim was held up in a paused database. The lease is
 *               listed in the next heartbeat; the renewal that answers it
 *               anchors a fresh window and the lease is offered. Never handed
 *               to the handler thread before that, so nothing can run on it.
 *   - waiting:  pre-dispatched: assigned ahead of its due instant and held
 *               here until then (the session's start timer), renewed like any
 *               lease. Never handed to the handler thread before its start, so
 *               until then the agent can give it back (Withdraw, drain, a
 *               window that runs out) knowing nothing ran. At its start it is
 *               offered when the handler thread has a free slot; otherwise it
 *               keeps waiting for one (the start queue, which may hold more
 *               than the capacity) and is given back if none frees within a
 *               grace (`overdue`).
 *   - offered:  assigned and handed to the handler thread, not yet known to
 *               have started. Only the handler thread may turn it into a
 *               release, because only it knows whether the handler was called.
 *   - running:  the handler was called.
 *   - finished: the run ended with a reportable result; the outcome is re-sent
 *               until an OutcomeAck arrives (on any stream).
 *   Every phase counts as held: all of them are listed in Hello and in every
 *   Heartbeat. Offered and running leases take a slot of the handler thread;
 *   the session holds at most `capacity` leases that are not finished
 *   (`unfinished`), plus its start queue of waiting ones. Finished leases
 *   only wait for their ack: their slots are free (Hello.slots_free_on_outcome).
 *
 * Trust window (invariants)
 *   - trustedUntil = anchor + remaining − margin, where `anchor` is the
 *     monotonic time the agent SENT the heartbeat (or Hello) that the renewal
 *     answers, or the time it RECEIVED the assignment. The send time precedes
 *     the database's `now()` for that renewal, so the estimate can only err on
 *     the early side, whatever the network or coordinator delay.
 *   - A renewal is applied only if its anchor is later than the one behind the
 *     current window ("newest heartbeat wins"): a delayed reply to an older
 *     heartbeat cannot extend or shorten a window set by a newer one. Anchors
 *     are comparable across streams because they are all this thread's clock.
 *   - A `lost` status, a Revoke, or `remaining_ms == 0` forgets the lease at
 *     once, whatever its anchor: a generation never comes back.
 *   - Only offered and running leases are fenced by the window (there is a
 *     handler to stop). A finished lease has nothing left to abort; it stays
 *     until acked or reported lost, and its outcome is harmless to re-send
 *     because the coordinator fences it by generation.
 *
 * Failure handling
 *   - Coordinator or database unreachable: no renewals arrive, windows run out,
 *     `fenceExpired` marks them finished (aborted) and hands them back. Nothing here waits for
 *     the network.
 *   - A status for a lease not held (acked meanwhile, or never ours): ignored.
 */
import type { LeaseKey, LeaseLossReason, LeaseOffer, ReportableResult } from '../runtime/thread-messages';
import { leaseId } from '../runtime/thread-messages';
import { MinHeap } from './min-heap';

/**
 * The default safety margin: 10% of the lease, at least 200 ms. Windows are
 * anchored at send times, so the margin only has to cover the database's
 * clock step between claim or renewal and reply, and the fence's timer slack.
 */
export function defaultTrustMarginMs(leaseMs: number): number {
  return Math.max(200, Math.round(leaseMs * 0.1));
}

/** An outcome waiting for its OutcomeAck. */
export interface PendingOutcome {
  readonly result: ReportableResult;
  readonly error: string;
  readonly finishedAtMs: number;
  /** The run's trace context, sent with the outcome (null or absent: none). */
  readonly traceparent?: string | null;
}

/** Where a held lease is in its life; see the diagram at the top of the file. */
export type LeasePhase =
  /** `offer` goes to the handler thread once a renewal confirms the lease. */
  | { readonly kind: 'confirming'; readonly offer: LeaseOffer; readonly startAtDbMs: number }
  /** `offer` goes to the handler thread at `startAt` (monotonic ms). */
  | { readonly kind: 'waiting'; readonly offer: LeaseOffer; readonly startAt: number }
  | { readonly kind: 'offered' }
  | { readonly kind: 'running'; readonly startedAt: number }
  | {
      readonly kind: 'finished';
      readonly outcome: PendingOutcome;
      /** Monotonic time it was last written to a stream; null = not on the current stream yet. */
      lastSentAt: number | null;
    };

export interface HeldLease {
  readonly key: LeaseKey;
  readonly id: string;
  readonly task: string;
  phase: LeasePhase;
  /**
   * Monotonic deadline after which the lease must not be trusted. While
   * confirming: when to give up waiting for the renewal and release it.
   */
  trustedUntil: number;
  /** Monotonic send time of the renewal behind `trustedUntil` (or of the assignment's anchor heartbeat). */
  anchor: number;
  /** An operator aborted the run (Revoke CANCELLED, or abort_requested): the handler is stopping. */
  aborting: boolean;
}

type WaitingPhase = Extract<LeasePhase, { kind: 'waiting' }>;

/**
 * A lease's entry in the start heap: current while the lease is held and still
 * in this very waiting phase (entries are never taken out early: a lease that
 * stops waiting leaves a stale entry, skipped when it reaches the top).
 */
interface StartEntry {
  readonly lease: HeldLease;
  readonly phase: WaitingPhase;
  /** Arrival order: equal starts leave in the order they came. */
  readonly seq: number;
}

function startsBefore(a: StartEntry, b: StartEntry): boolean {
  return a.phase.startAt < b.phase.startAt || (a.phase.startAt === b.phase.startAt && a.seq < b.seq);
}

/** A lease status from a RenewReply, reduced to what the keeper needs. */
export type RenewStatus =
  | { readonly kind: 'held'; readonly remainingMs: number; readonly abortRequested?: boolean }
  | { readonly kind: 'lost'; readonly reason: LeaseLossReason };

/** What applying one status did. */
export type RenewVerdict =
  | { readonly kind: 'renewed'; readonly lease: HeldLease }
  /** A confirming lease got its first renewal: it may be offered now (or waited for, when `startAtDbMs` is ahead). */
  | { readonly kind: 'confirmed'; readonly lease: HeldLease; readonly offer: LeaseOffer; readonly startAtDbMs: number }
  | { readonly kind: 'lost'; readonly lease: HeldLease; readonly reason: LeaseLossReason }
  /** Not held, or older than the renewal already applied. */
  | { readonly kind: 'ignored' };

export class LeaseKeeper {
  /**
   * Held leases by job id: at most one generation of a job is held (a newer
   * assignment drops the older lease first, see `otherGeneration`), and a
   * lookup by job id needs no key string built per call.
   */
  private readonly leases = new Map<string, HeldLease>();
  /**
   * Held leases per phase, kept by `add`, `remove` and `setPhase` (the only
   * writers of a phase): the slot counts are read on every start-queue turn
   * and every outcome, and a spike holds thousands of leases.
   */
  private readonly phaseCounts: Record<LeasePhase['kind'], number> = { confirming: 0, waiting: 0, offered: 0, running: 0, finished: 0 };
  /** Waiting leases by start instant, earliest first (with stale entries; see StartEntry). */
  private readonly starts = new MinHeap<StartEntry>(startsBefore);
  private startSeq = 0;
  private marginMs: number;

  constructor(marginMs: number) {
    this.marginMs = marginMs;
  }

  /** The safety margin subtracted from every window (set from Welcome's lease_ms). */
  setMargin(marginMs: number): void {
    this.marginMs = marginMs;
  }

  get margin(): number {
    return this.marginMs;
  }

  /** Number of held leases in any phase. */
  get size(): number {
    return this.leases.size;
  }

  /**
   * Held leases that are not finished: what counts against the capacity. A
   * finished lease only waits for its OutcomeAck; its slot is free (the agent
   * announces Hello.slots_free_on_outcome).
   */
  get unfinished(): number {
    return this.leases.size - this.phaseCounts.finished;
  }

  get(key: LeaseKey): HeldLease | undefined {
    const lease = this.leases.get(key.jobId);
    return lease !== undefined && lease.key.generation === key.generation ? lease : undefined;
  }

  /** The held lease of the same job at another generation, if any. */
  otherGeneration(key: LeaseKey): HeldLease | undefined {
    const lease = this.leases.get(key.jobId);
    return lease !== undefined && lease.key.generation !== key.generation ? lease : undefined;
  }

  /** Starts holding a freshly assigned lease, trusted from `anchor`: the send time of its anchor heartbeat (see session.ts). */
  hold(key: LeaseKey, task: string, remainingMs: number, anchor: number): HeldLease {
    return this.add(key, task, { kind: 'offered' }, anchor + remainingMs - this.marginMs, anchor);
  }

  /**
   * Holds an assignment whose anchor leaves too little to trust, until a
   * renewal of a heartbeat sent after `receivedAt` confirms it. Released if
   * none has by `giveUpAt`.
   */
  holdUnconfirmed(key: LeaseKey, task: string, receivedAt: number, giveUpAt: number, offer: LeaseOffer, startAtDbMs = 0): HeldLease {
    return this.add(key, task, { kind: 'confirming', offer, startAtDbMs }, giveUpAt, receivedAt);
  }

  /** Holds a pre-dispatched assignment until `startAt` (monotonic), trusted like `hold`. */
  holdWaiting(key: LeaseKey, task: string, remainingMs: number, anchor: number, offer: LeaseOffer, startAt: number): HeldLease {
    const phase: WaitingPhase = { kind: 'waiting', offer, startAt };
    const lease = this.add(key, task, phase, anchor + remainingMs - this.marginMs, anchor);
    this.pushStart(lease, phase);
    return lease;
  }

  /** A confirmed lease whose start is still ahead: offered -> waiting. */
  wait(key: LeaseKey, offer: LeaseOffer, startAt: number): void {
    const lease = this.get(key);
    if (lease === undefined || lease.phase.kind !== 'offered') return;
    const phase: WaitingPhase = { kind: 'waiting', offer, startAt };
    this.setPhase(lease, phase);
    this.pushStart(lease, phase);
  }

  /** Entries of the start heap, stale ones included (bounded by about twice the held leases; a diagnostic for tests). */
  get startEntries(): number {
    return this.starts.size;
  }

  private pushStart(lease: HeldLease, phase: WaitingPhase): void {
    // Stale entries are dropped when they outnumber the leases (withdrawals and losses of waiting leases).
    if (this.starts.size > 2 * this.leases.size + 64) this.starts.retain((entry) => this.isCurrent(entry));
    this.starts.push({ lease, phase, seq: this.startSeq++ });
  }

  private isCurrent(entry: StartEntry): boolean {
    return entry.lease.phase === entry.phase && this.leases.get(entry.lease.key.jobId) === entry.lease;
  }

  /** The current entry with the earliest start (stale ones above it are dropped), or undefined. */
  private firstStart(): StartEntry | undefined {
    for (;;) {
      const top = this.starts.peek();
      if (top === undefined || this.isCurrent(top)) return top;
      this.starts.pop();
    }
  }

  /**
   * Waiting leases whose start has come (`startAt <= now`), earliest start
   * first, at most `slots` of them: now offered; returns their offers, and
   * whether a lease whose start has come still waits for a free slot
   * (`blocked`: the start queue).
   */
  startDue(now: number, slots: number): { offers: LeaseOffer[]; blocked: boolean } {
    const offers: LeaseOffer[] = [];
    for (let first = this.firstStart(); first !== undefined && first.phase.startAt <= now; first = this.firstStart()) {
      if (offers.length >= slots) return { offers, blocked: true };
      this.starts.pop();
      offers.push(first.phase.offer);
      this.setPhase(first.lease, { kind: 'offered' });
    }
    return { offers, blocked: false };
  }

  /**
   * Waiting leases whose start is at most `horizon` (the session's clock), earliest first, at most `room`
   * of them: now offered ahead of their start (staged, decision 0030); returns each offer with its start
   * and the end of its trust window now.
   */
  stageDue(horizon: number, room: number): { offer: LeaseOffer; startAt: number; trustedUntil: number }[] {
    const staged: { offer: LeaseOffer; startAt: number; trustedUntil: number }[] = [];
    for (let first = this.firstStart(); first !== undefined && first.phase.startAt <= horizon && staged.length < room; first = this.firstStart()) {
      this.starts.pop();
      staged.push({ offer: first.phase.offer, startAt: first.phase.startAt, trustedUntil: first.lease.trustedUntil });
      this.setPhase(first.lease, { kind: 'offered' });
    }
    return staged;
  }

  /** Whether a waiting lease's start has come (`startAt <= now`): after `startDue`, one that found no slot. */
  anyStarted(now: number): boolean {
    const first = this.firstStart();
    return first !== undefined && first.phase.startAt <= now;
  }

  /** Leases the handler thread has and has not reported started (queued there, or staged). */
  offeredCount(): number {
    return this.phaseCounts.offered;
  }

  /** Leases the handler thread has (offered or running): each takes one of its slots. */
  handlerSlotsInUse(): number {
    return this.phaseCounts.offered + this.phaseCounts.running;
  }

  /**
   * Waiting leases whose start has passed and whose `releaseAt(startAt)` has
   * come without a free slot: forgotten and returned, to be given back so
   * another agent runs them.
   */
  overdue(now: number, releaseAt: (startAt: number) => number): HeldLease[] {
    // releaseAt grows with the start, so the late ones are the first in start order.
    const late: HeldLease[] = [];
    for (let first = this.firstStart(); first !== undefined && first.phase.startAt <= now && releaseAt(first.phase.startAt) <= now; first = this.firstStart()) {
      this.starts.pop();
      this.remove(first.lease);
      late.push(first.lease);
    }
    return late;
  }

  /**
   * When the start timer must next fire (monotonic), undefined if no lease
   * waits: the earliest start still ahead, or for a lease whose start passed
   * without a free slot, when it would be given back (`releaseAt`).
   */
  nextStart(now: number, releaseAt: (startAt: number) => number): number | undefined {
    // The earliest start decides: if it has come, the later ones can only start after it (a slot frees,
    // and the session tries them then), or once it has been given back.
    const first = this.firstStart();
    if (first === undefined) return undefined;
    return first.phase.startAt > now ? first.phase.startAt : releaseAt(first.phase.startAt);
  }

  /**
   * A Withdraw: a lease whose handler thread never got it (waiting or
   * confirming) is forgotten and returned, to be released; undefined when it
   * is not held or has been offered (it may have started: the agent keeps it).
   */
  withdraw(key: LeaseKey): HeldLease | undefined {
    const lease = this.get(key);
    if (lease === undefined || (lease.phase.kind !== 'waiting' && lease.phase.kind !== 'confirming')) return undefined;
    this.remove(lease);
    return lease;
  }

  private add(key: LeaseKey, task: string, phase: LeasePhase, trustedUntil: number, anchor: number): HeldLease {
    const lease: HeldLease = {
      key: { jobId: key.jobId, generation: key.generation },
      id: leaseId(key),
      task,
      phase,
      trustedUntil,
      anchor,
      aborting: false,
    };
    const replaced = this.leases.get(key.jobId);
    if (replaced !== undefined) this.remove(replaced);
    this.leases.set(key.jobId, lease);
    this.phaseCounts[phase.kind]++;
    return lease;
  }

  /** The one writer of a held lease's phase after `add`: keeps `phaseCounts`. */
  private setPhase(lease: HeldLease, phase: LeasePhase): void {
    if (this.leases.get(lease.key.jobId) === lease) {
      this.phaseCounts[lease.phase.kind]--;
      this.phaseCounts[phase.kind]++;
    }
    lease.phase = phase;
  }

  private remove(lease: HeldLease): void {
    if (this.leases.get(lease.key.jobId) !== lease) return;
    this.leases.delete(lease.key.jobId);
    this.phaseCounts[lease.phase.kind]--;
  }

  /** Any phase but finished -> finished, counted (see `unfinished`). */
  private finish(lease: HeldLease, outcome: PendingOutcome): void {
    this.setPhase(lease, { kind: 'finished', outcome, lastSentAt: null });
  }

  /** offered -> running. False if the lease is no longer held (lost meanwhile). */
  markStarted(key: LeaseKey, now: number): boolean {
    const lease = this.get(key);
    if (lease === undefined || lease.phase.kind !== 'offered') return false;
    this.setPhase(lease, { kind: 'running', startedAt: now });
    return true;
  }

  /** offered|running -> finished. False if the lease is no longer held: drop the outcome. */
  markFinished(key: LeaseKey, outcome: PendingOutcome): boolean {
    const lease = this.get(key);
    if (lease === undefined || lease.phase.kind === 'finished' || lease.phase.kind === 'confirming' || lease.phase.kind === 'waiting') return false;
    this.finish(lease, outcome);
    return true;
  }

  /**
   * An operator aborted the run: marks the lease as aborting and returns it,
   * unless it is not held, already aborting, or already finished (its outcome
   * is on its way), when there is nothing more to do.
   */
  markAborting(key: LeaseKey): HeldLease | undefined {
    const lease = this.get(key);
    if (lease === undefined || lease.aborting || lease.phase.kind === 'finished') return undefined;
    lease.aborting = true;
    return lease;
  }

  /**
   * A lease the handler thread never got (confirming, or confirmed and not yet
   * offered) ends without running: finished with `outcome`, to be reported.
   */
  finishUnstarted(key: LeaseKey, outcome: PendingOutcome): boolean {
    const lease = this.get(key);
    if (lease === undefined || lease.phase.kind === 'finished' || lease.phase.kind === 'running') return false;
    this.finish(lease, outcome);
    return true;
  }

  /** Forgets a lease (released, revoked, lost). Returns it if it was held. */
  drop(key: LeaseKey): HeldLease | undefined {
    const lease = this.get(key);
    if (lease !== undefined) this.remove(lease);
    return lease;
  }

  /** Every held lease, for Hello.held_leases and Heartbeat.leases. */
  refs(): LeaseKey[] {
    return [...this.leases.values()].map((lease) => lease.key);
  }

  /**
   * Applies one LeaseStatus of a RenewReply. `sentAt` is the monotonic time the
   * answered heartbeat (or Hello) was sent; undefined when the reply names a
   * seq the agent does not know, in which case only losses are applied.
   */
  applyRenewal(key: LeaseKey, status: RenewStatus, sentAt: number | undefined): RenewVerdict {
    const lease = this.get(key);
    if (lease === undefined) return { kind: 'ignored' };
    if (status.kind === 'lost') {
      this.remove(lease);
      return { kind: 'lost', lease, reason: status.reason };
    }
    if (sentAt === undefined || sentAt <= lease.anchor) return { kind: 'ignored' };
    if (status.remainingMs <= 0) {
      // The contract: 0 ms left means the lease is about to run out; treat it as lost.
      this.remove(lease);
      return { kind: 'lost', lease, reason: 'expired' };
    }
    lease.anchor = sentAt;
    lease.trustedUntil = sentAt + status.remainingMs - this.marginMs;
    if (lease.phase.kind === 'confirming') {
      const { offer, startAtDbMs } = lease.phase;
      this.setPhase(lease, { kind: 'offered' });
      return { kind: 'confirmed', lease, offer, startAtDbMs };
    }
    return { kind: 'renewed', lease };
  }

  /**
   * The self-fence: offered/running leases whose window has run out become
   * finished with `outcome` (the handler is being aborted). Their outcome is
   * still reported, and the coordinator's fence decides: recorded as a failure
   * (retried) if the lease is somehow still current, rejected as stale if the
   * job has moved on. Either way the agent stops acting on them. Returns them.
   */
  fenceExpired(now: number, outcome: PendingOutcome): HeldLease[] {
    const expired: HeldLease[] = [];
    for (const lease of this.leases.values()) {
      if ((lease.phase.kind === 'offered' || lease.phase.kind === 'running') && now >= lease.trustedUntil) expired.push(lease);
    }
    for (const lease of expired) this.finish(lease, outcome);
    return expired;
  }

  /**
   * Leases the handler thread never got whose deadline passed: confirming ones
   * no renewal confirmed, waiting ones whose window ran out before their
   * start. Forgotten and returned (to release).
   */
  expireUnconfirmed(now: number): HeldLease[] {
    const expired: HeldLease[] = [];
    for (const lease of this.leases.values()) {
      if ((lease.phase.kind === 'confirming' || lease.phase.kind === 'waiting') && now >= lease.trustedUntil) expired.push(lease);
    }
    for (const lease of expired) this.remove(lease);
    return expired;
  }

  /** Every confirming or waiting lease, forgotten and returned (the agent is draining: release them). */
  dropUnconfirmed(): HeldLease[] {
    return this.expireUnconfirmed(Number.POSITIVE_INFINITY);
  }

  /** Earliest window end (or confirmation deadline) among leases not finished; undefined if there is none. */
  nextTrustDeadline(): number | undefined {
    let earliest: number | undefined;
    for (const lease of this.leases.values()) {
      if (lease.phase.kind === 'finished') continue;
      if (earliest === undefined || lease.trustedUntil < earliest) earliest = lease.trustedUntil;
    }
    return earliest;
  }

  /**
   * Finished leases whose outcome should be written now: never sent on the
   * current stream, or sent at least `resendAfterMs` ago without an ack. Marks
   * them as sent at `now`.
   */
  outcomesDue(now: number, resendAfterMs: number): HeldLease[] {
    const due: HeldLease[] = [];
    for (const lease of this.leases.values()) {
      const phase = lease.phase;
      if (phase.kind !== 'finished') continue;
      if (phase.lastSentAt === null || now - phase.lastSentAt >= resendAfterMs) {
        phase.lastSentAt = now;
        due.push(lease);
      }
    }
    return due;
  }

  /** A new stream replaced the old one: every unacked outcome is due on it at once. */
  forgetOutcomeSends(): void {
    for (const lease of this.leases.values()) {
      if (lease.phase.kind === 'finished') lease.phase.lastSentAt = null;
    }
  }

  /** An OutcomeAck arrived: forget the lease if its outcome was pending. */
  acknowledge(key: LeaseKey): HeldLease | undefined {
    const lease = this.get(key);
    if (lease === undefined || lease.phase.kind !== 'finished') return undefined;
    this.remove(lease);
    return lease;
  }
}
