import { defaultTrustMarginMs, LeaseKeeper } from './lease-keeper';

const A = { jobId: 'a', generation: 1n };
const B = { jobId: 'b', generation: 4n };
const done = { result: 'succeeded' as const, error: '', finishedAtMs: 0 };
const offer = (key: typeof A) => ({ ...key, runId: '1', task: 'sleep', payloadJson: '{}', attempt: 1, maxAttempts: 3, timeoutMs: 0, scheduledForMs: null });

describe('defaultTrustMarginMs', () => {
  it('is 10% of the lease, at least 200 ms', () => {
    expect(defaultTrustMarginMs(600)).toBe(200);
    expect(defaultTrustMarginMs(10_000)).toBe(1_000);
  });
});

describe('LeaseKeeper', () => {
  it('trusts a new lease from its receive time plus the remaining time, minus the margin', () => {
    const keeper = new LeaseKeeper(200);
    const lease = keeper.hold(A, 'sleep', 600, 1_000);
    expect(lease.trustedUntil).toBe(1_400);
    expect(keeper.nextTrustDeadline()).toBe(1_400);
    const fenced = { result: 'cancelled' as const, error: 'self-fenced', finishedAtMs: 1_400 };
    expect(keeper.fenceExpired(1_399, fenced)).toEqual([]);
    expect(keeper.fenceExpired(1_400, fenced).map((l) => l.id)).toEqual(['a@1']);
    // Still held, now finished: its CANCELLED outcome is reported and the coordinator's fence decides.
    expect(keeper.get(A)?.phase).toMatchObject({ kind: 'finished', outcome: fenced });
    expect(keeper.nextTrustDeadline()).toBeUndefined();
  });

  it('anchors a renewal at the heartbeat SEND time, not the reply time', () => {
    const keeper = new LeaseKeeper(200);
    keeper.hold(A, 'sleep', 600, 1_000);
    // Heartbeat sent at 1_200; the reply (whenever it arrives) says 600 ms left.
    const verdict = keeper.applyRenewal(A, { kind: 'held', remainingMs: 600 }, 1_200);
    expect(verdict.kind).toBe('renewed');
    expect(keeper.get(A)?.trustedUntil).toBe(1_600);
  });

  it('ignores a renewal older than the one already applied', () => {
    const keeper = new LeaseKeeper(200);
    keeper.hold(A, 'sleep', 600, 1_000);
    keeper.applyRenewal(A, { kind: 'held', remainingMs: 600 }, 1_400);
    expect(keeper.applyRenewal(A, { kind: 'held', remainingMs: 5_000 }, 1_200)).toEqual({ kind: 'ignored' });
    expect(keeper.get(A)?.trustedUntil).toBe(1_800);
    // An unknown seq (no send time) cannot extend trust either.
    expect(keeper.applyRenewal(A, { kind: 'held', remainingMs: 5_000 }, undefined)).toEqual({ kind: 'ignored' });
  });

  it('treats remaining 0 and lost statuses as losses, even from an older reply', () => {
    const keeper = new LeaseKeeper(200);
    keeper.hold(A, 'sleep', 600, 1_000);
    keeper.hold(B, 'sleep', 600, 1_000);
    expect(keeper.applyRenewal(A, { kind: 'held', remainingMs: 0 }, 1_100)).toMatchObject({ kind: 'lost', reason: 'expired' });
    keeper.applyRenewal(B, { kind: 'held', remainingMs: 600 }, 1_500);
    expect(keeper.applyRenewal(B, { kind: 'lost', reason: 'stale-generation' }, 1_200)).toMatchObject({
      kind: 'lost',
      reason: 'stale-generation',
    });
    expect(keeper.size).toBe(0);
  });

  it('lists every phase as held, but fences only offered and running leases', () => {
    const keeper = new LeaseKeeper(200);
    keeper.hold(A, 'sleep', 600, 0);
    keeper.hold(B, 'sleep', 600, 0);
    keeper.markStarted(A, 10);
    keeper.markFinished(B, done);
    expect(keeper.refs()).toEqual([A, B]);
    expect(keeper.fenceExpired(10_000, done).map((l) => l.id)).toEqual(['a@1']);
    expect(keeper.fenceExpired(20_000, done)).toEqual([]);
    expect(keeper.nextTrustDeadline()).toBeUndefined();
  });

  it('counts finished leases apart: they are held, but only unfinished ones take a slot', () => {
    const keeper = new LeaseKeeper(200);
    keeper.hold(A, 'sleep', 600, 0);
    keeper.hold(B, 'sleep', 600, 0);
    keeper.markStarted(A, 10);
    expect([keeper.size, keeper.unfinished]).toEqual([2, 2]);
    keeper.markFinished(A, done);
    keeper.markFinished(A, done); // already finished: counted once
    expect([keeper.size, keeper.unfinished]).toEqual([2, 1]);
    expect(keeper.fenceExpired(10_000, done).map((l) => l.id)).toEqual(['b@4']);
    expect([keeper.size, keeper.unfinished]).toEqual([2, 0]);
    keeper.acknowledge(A);
    expect([keeper.size, keeper.unfinished]).toEqual([1, 0]);
    // A finished lease dropped (lost), or replaced by a newer generation of its job, is no longer counted.
    keeper.drop(B);
    keeper.hold(A, 'sleep', 600, 20_000);
    keeper.markFinished(A, done);
    keeper.hold({ jobId: 'a', generation: 2n }, 'sleep', 600, 20_000);
    expect([keeper.size, keeper.unfinished]).toEqual([1, 1]);
  });

  it('re-sends an outcome only after resendAfterMs, and at once on a new stream', () => {
    const keeper = new LeaseKeeper(200);
    keeper.hold(A, 'sleep', 600, 0);
    keeper.markFinished(A, done);
    expect(keeper.outcomesDue(100, 400)).toHaveLength(1);
    expect(keeper.outcomesDue(300, 400)).toHaveLength(0);
    expect(keeper.outcomesDue(500, 400)).toHaveLength(1);
    keeper.forgetOutcomeSends();
    expect(keeper.outcomesDue(501, 400)).toHaveLength(1);
    expect(keeper.acknowledge(A)?.id).toBe('a@1');
    expect(keeper.size).toBe(0);
  });

  it('refuses to finish or start a lease it no longer holds', () => {
    const keeper = new LeaseKeeper(200);
    expect(keeper.markStarted(A, 0)).toBe(false);
    expect(keeper.markFinished(A, done)).toBe(false);
    keeper.hold(A, 'sleep', 600, 0);
    expect(keeper.acknowledge(A)).toBeUndefined(); // not finished: an ack cannot drop it
    expect(keeper.otherGeneration({ jobId: 'a', generation: 2n })?.id).toBe('a@1');
  });

  it('holds a confirming lease without fencing it, offers it on a renewal sent after receipt, releases it at its deadline', () => {
    const keeper = new LeaseKeeper(200);
    const fenced = { result: 'cancelled' as const, error: 'self-fenced', finishedAtMs: 0 };
    keeper.holdUnconfirmed(A, 'sleep', 1_000, 1_600, offer(A));
    keeper.holdUnconfirmed(B, 'sleep', 1_000, 1_600, offer(B));
    expect(keeper.size).toBe(2);
    expect(keeper.refs()).toEqual([A, B]);
    expect(keeper.nextTrustDeadline()).toBe(1_600);
    // Never fenced (there is no handler) and cannot start or finish.
    expect(keeper.fenceExpired(5_000, fenced)).toEqual([]);
    expect(keeper.markStarted(A, 1_100)).toBe(false);
    expect(keeper.markFinished(A, done)).toBe(false);
    // A reply to a heartbeat sent before the assignment arrived cannot confirm it.
    expect(keeper.applyRenewal(A, { kind: 'held', remainingMs: 600 }, 900).kind).toBe('ignored');
    const verdict = keeper.applyRenewal(A, { kind: 'held', remainingMs: 600 }, 1_050);
    expect(verdict).toMatchObject({ kind: 'confirmed', offer: offer(A) });
    expect(keeper.get(A)).toMatchObject({ phase: { kind: 'offered' }, trustedUntil: 1_450, anchor: 1_050 });
    // B got no renewal: at its deadline it is forgotten and handed back for release.
    expect(keeper.expireUnconfirmed(1_599)).toEqual([]);
    expect(keeper.expireUnconfirmed(1_600).map((l) => l.id)).toEqual(['b@4']);
    expect(keeper.get(B)).toBeUndefined();
    expect(keeper.dropUnconfirmed()).toEqual([]);
  });

  it('finds the other held generation of a job, and forgets it once dropped', () => {
    const keeper = new LeaseKeeper(200);
    keeper.hold(A, 'sleep', 600, 1_000);
    expect(keeper.otherGeneration({ jobId: 'a', generation: 2n })?.id).toBe('a@1');
    expect(keeper.otherGeneration(A)).toBeUndefined();
    expect(keeper.otherGeneration(B)).toBeUndefined();
    keeper.drop(A);
    expect(keeper.otherGeneration({ jobId: 'a', generation: 2n })).toBeUndefined();
  });

  it('answers a lookup only for the generation it holds: another generation of the job is not held, and dropping it drops nothing', () => {
    const keeper = new LeaseKeeper(200);
    keeper.hold(A, 'sleep', 600, 1_000);
    const newer = { jobId: 'a', generation: 2n };
    expect(keeper.get(newer)).toBeUndefined();
    expect(keeper.drop(newer)).toBeUndefined();
    expect(keeper.markStarted(newer, 1_100)).toBe(false);
    expect(keeper.get(A)?.id).toBe('a@1');
    expect(keeper.size).toBe(1);
    // The session drops the older generation before holding the newer one (onAssignments).
    keeper.drop(A);
    keeper.hold(newer, 'sleep', 600, 1_200);
    expect(keeper.get(A)).toBeUndefined();
    expect(keeper.get(newer)?.id).toBe('a@2');
    expect(keeper.refs()).toEqual([newer]);
  });
});

describe('LeaseKeeper: pre-dispatched (waiting) leases', () => {
  /** Given back 500 ms after its start (the session's rule also looks at slots freeing). */
  const grace = (startAt: number) => startAt + 500;

  it('holds a waiting lease until its start, renews it meanwhile, and offers it then', () => {
    const keeper = new LeaseKeeper(200);
    keeper.holdWaiting(A, 'sleep', 10_000, 1_000, offer(A), 3_000);
    keeper.holdWaiting(B, 'sleep', 10_000, 1_000, offer(B), 2_000);
    expect(keeper.size).toBe(2);
    expect(keeper.nextStart(0, grace)).toBe(2_000);
    // Not an outcome, not fenced: nothing runs on it yet.
    expect(keeper.markFinished(A, done)).toBe(false);
    expect(keeper.fenceExpired(20_000, done)).toEqual([]);
    expect(keeper.applyRenewal(A, { kind: 'held', remainingMs: 10_000 }, 1_500)).toMatchObject({ kind: 'renewed' });
    expect(keeper.get(A)?.phase.kind).toBe('waiting');
    expect(keeper.startDue(1_999, 4)).toEqual({ offers: [], blocked: false });
    expect(keeper.startDue(2_000, 4)).toEqual({ offers: [offer(B)], blocked: false });
    expect(keeper.get(B)?.phase.kind).toBe('offered');
    expect(keeper.nextStart(2_000, grace)).toBe(3_000);
    expect(keeper.startDue(3_000, 4)).toEqual({ offers: [offer(A)], blocked: false });
    expect(keeper.nextStart(3_000, grace)).toBeUndefined();
  });

  it('gives a waiting lease back on Withdraw, never an offered one', () => {
    const keeper = new LeaseKeeper(200);
    keeper.holdWaiting(A, 'sleep', 10_000, 1_000, offer(A), 3_000);
    keeper.hold(B, 'sleep', 10_000, 1_000);
    expect(keeper.withdraw(B)).toBeUndefined();
    expect(keeper.withdraw(A)?.id).toBe('a@1');
    expect(keeper.get(A)).toBeUndefined();
    expect(keeper.withdraw(A)).toBeUndefined();
  });

  it('forgets a waiting lease whose window runs out before its start (to release it), and on drain', () => {
    const keeper = new LeaseKeeper(200);
    keeper.holdWaiting(A, 'sleep', 1_000, 1_000, offer(A), 5_000);
    keeper.holdWaiting(B, 'sleep', 10_000, 1_000, offer(B), 5_000);
    expect(keeper.expireUnconfirmed(1_799)).toEqual([]);
    expect(keeper.expireUnconfirmed(1_800).map((lease) => lease.id)).toEqual(['a@1']);
    expect(keeper.dropUnconfirmed().map((lease) => lease.id)).toEqual(['b@4']);
    expect(keeper.size).toBe(0);
  });

  it('an abort of a waiting lease finishes it CANCELLED without an offer', () => {
    const keeper = new LeaseKeeper(200);
    keeper.holdWaiting(A, 'sleep', 10_000, 1_000, offer(A), 5_000);
    expect(keeper.markAborting(A)).toBeDefined();
    expect(keeper.finishUnstarted(A, { result: 'cancelled', error: 'aborted', finishedAtMs: 0 })).toBe(true);
    expect(keeper.startDue(10_000, 4)).toEqual({ offers: [], blocked: false });
  });

  it('a confirmed lease with its start ahead waits for it', () => {
    const keeper = new LeaseKeeper(200);
    keeper.holdUnconfirmed(A, 'sleep', 1_000, 11_000, offer(A), 1_893_456_000_000);
    const verdict = keeper.applyRenewal(A, { kind: 'held', remainingMs: 10_000 }, 1_100);
    expect(verdict).toMatchObject({ kind: 'confirmed', startAtDbMs: 1_893_456_000_000 });
    keeper.wait(A, offer(A), 4_000);
    expect(keeper.get(A)?.phase.kind).toBe('waiting');
    expect(keeper.startDue(4_000, 4)).toEqual({ offers: [offer(A)], blocked: false });
  });

  it('the start queue: due leases beyond the free slots wait for one, earliest start first, and are given back after the grace', () => {
    const keeper = new LeaseKeeper(200);
    const C = { jobId: 'c', generation: 1n };
    keeper.hold(B, 'sleep', 10_000, 1_000); // offered: takes one of the two slots
    keeper.holdWaiting(A, 'sleep', 10_000, 1_000, offer(A), 2_010);
    keeper.holdWaiting(C, 'sleep', 10_000, 1_000, offer(C), 2_000);
    expect(keeper.handlerSlotsInUse()).toBe(1);
    // One free slot at 2,010: the earlier start goes first, the other queues.
    expect(keeper.startDue(2_010, 2 - keeper.handlerSlotsInUse())).toEqual({ offers: [offer(C)], blocked: true });
    expect(keeper.handlerSlotsInUse()).toBe(2);
    expect(keeper.startDue(2_100, 0)).toEqual({ offers: [], blocked: true });
    // The timer's next instant is the end of its grace.
    expect(keeper.nextStart(2_100, grace)).toBe(2_510);
    expect(keeper.overdue(2_509, grace)).toEqual([]);
    // A slot frees (an outcome): it starts.
    keeper.markStarted(B, 2_200);
    expect(keeper.markFinished(B, done)).toBe(true);
    expect(keeper.startDue(2_300, 2 - keeper.handlerSlotsInUse())).toEqual({ offers: [offer(A)], blocked: false });
    // C and A are offered and not yet started (the session holds outcomes until they have: offeredCount).
    expect(keeper.offeredCount() > 0).toBe(true);
    keeper.markStarted(C, 2_301);
    expect(keeper.offeredCount() > 0).toBe(true);
    keeper.markStarted(A, 2_302);
    expect(keeper.offeredCount() > 0).toBe(false);
  });

  it('staging: waiting leases whose start is within the horizon are offered ahead with their start, earliest first, at most `room`', () => {
    const keeper = new LeaseKeeper(200);
    const C = { jobId: 'c', generation: 1n };
    keeper.holdWaiting(A, 'sleep', 10_000, 1_000, offer(A), 2_200);
    keeper.holdWaiting(B, 'sleep', 10_000, 1_000, offer(B), 2_100);
    keeper.holdWaiting(C, 'sleep', 10_000, 1_000, offer(C), 9_000);
    // Trusted until anchor + lease - margin: 1,000 + 10,000 - 200.
    expect(keeper.stageDue(2_250, 1)).toEqual([{ offer: offer(B), startAt: 2_100, trustedUntil: 10_800 }]);
    expect(keeper.stageDue(2_250, 5)).toEqual([{ offer: offer(A), startAt: 2_200, trustedUntil: 10_800 }]);
    // Offered: counted as the handler thread's, and no longer withdrawable; C is beyond the horizon.
    expect(keeper.handlerSlotsInUse()).toBe(2);
    expect(keeper.offeredCount()).toBe(2);
    expect(keeper.withdraw(A)).toBeUndefined();
    expect(keeper.get(C)?.phase.kind).toBe('waiting');
    expect(keeper.nextStart(2_000, grace)).toBe(9_000);
  });

  it('a queued lease whose release instant comes without a slot is forgotten, to be given back', () => {
    const keeper = new LeaseKeeper(200);
    keeper.holdWaiting(A, 'sleep', 10_000, 1_000, offer(A), 2_000);
    expect(keeper.startDue(2_000, 0)).toEqual({ offers: [], blocked: true });
    // The session's rule moves the instant while slots keep freeing; here it is fixed.
    expect(keeper.nextStart(2_100, (startAt) => startAt + 900)).toBe(2_900);
    expect(keeper.overdue(2_500, grace).map((lease) => lease.id)).toEqual(['a@1']);
    expect(keeper.get(A)).toBeUndefined();
    expect(keeper.nextStart(2_500, grace)).toBeUndefined();
  });

  it('a spike: equal starts leave in arrival order, slot-full by slot-full, skipping those withdrawn or lost meanwhile', () => {
    const keeper = new LeaseKeeper(200);
    const keys = Array.from({ length: 1_000 }, (_, i) => ({ jobId: `s${String(i).padStart(4, '0')}`, generation: 1n }));
    for (const key of keys) keeper.holdWaiting(key, 'sleep', 10_000, 1_000, offer(key), 2_000);
    // One earlier start, held last: it leads.
    const early = { jobId: 'early', generation: 1n };
    keeper.holdWaiting(early, 'sleep', 10_000, 1_000, offer(early), 1_999);
    expect(keeper.withdraw(keys[1]!)).toBeDefined();
    expect(keeper.applyRenewal(keys[2]!, { kind: 'lost', reason: 'cancelled' }, 1_500)).toMatchObject({ kind: 'lost' });
    const first = keeper.startDue(2_000, 256);
    expect(first.blocked).toBe(true);
    expect(first.offers.map((o) => o.jobId).slice(0, 4)).toEqual(['early', 's0000', 's0003', 's0004']);
    const rest: string[] = [];
    for (let round = 0; round < 4; round++) rest.push(...keeper.startDue(2_000, 256).offers.map((o) => o.jobId));
    expect([...first.offers.map((o) => o.jobId), ...rest]).toEqual(['early', ...keys.map((k) => k.jobId).filter((id) => id !== 's0001' && id !== 's0002')]);
    expect(keeper.anyStarted(2_000)).toBe(false);
    expect(keeper.nextStart(2_000, grace)).toBeUndefined();
  });

  it('stale start entries do not pile up: withdrawn waiting leases are dropped from the queue as it grows', () => {
    const keeper = new LeaseKeeper(200);
    for (let i = 0; i < 10_000; i++) {
      const key = { jobId: `w${i}`, generation: 1n };
      keeper.holdWaiting(key, 'sleep', 10_000, 1_000, offer(key), 100_000 + i);
      keeper.withdraw(key);
    }
    keeper.holdWaiting(A, 'sleep', 10_000, 1_000, offer(A), 200_000);
    expect(keeper.size).toBe(1);
    expect(keeper.startEntries).toBeLessThanOrEqual(2 * 1 + 64 + 1);
    expect(keeper.nextStart(0, grace)).toBe(200_000);
    expect(keeper.startDue(200_000, 4)).toEqual({ offers: [offer(A)], blocked: false });
  });
});

describe('LeaseKeeper: the phase counts behind the slot figures', () => {
  it('agree with the held leases after any sequence of changes (seeded random walk)', () => {
    const keeper = new LeaseKeeper(200);
    let seed = 2_312;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    const key = () => ({ jobId: `j${Math.floor(random() * 40)}`, generation: BigInt(1 + Math.floor(random() * 2)) });
    const result = { result: 'succeeded' as const, error: '', finishedAtMs: 0 };
    let now = 1_000;
    for (let step = 0; step < 5_000; step++) {
      now += 1;
      const k = key();
      switch (Math.floor(random() * 14)) {
        case 0: keeper.hold(k, 't', 10_000, now); break;
        case 1: keeper.holdWaiting(k, 't', 10_000, now, offer(k), now + Math.floor(random() * 50)); break;
        case 2: keeper.holdUnconfirmed(k, 't', now, now + 5_000, offer(k)); break;
        case 3: keeper.startDue(now, Math.floor(random() * 4)); break;
        case 4: keeper.markStarted(k, now); break;
        case 5: keeper.markFinished(k, result); break;
        case 6: keeper.acknowledge(k); break;
        case 7: keeper.withdraw(k); break;
        case 8: keeper.applyRenewal(k, random() < 0.5 ? { kind: 'lost', reason: 'cancelled' } : { kind: 'held', remainingMs: 10_000 }, now); break;
        case 9: keeper.wait(k, offer(k), now + 20); break;
        case 10: keeper.overdue(now, (startAt) => startAt + 10); break;
        case 11: keeper.fenceExpired(now - 9_000 + Math.floor(random() * 2_000), result); break;
        case 12: keeper.drop(k); break;
        case 13: if (keeper.markAborting(k)) keeper.finishUnstarted(k, result); break;
      }
      const phases = keeper.refs().map((ref) => keeper.get(ref)!.phase.kind);
      expect(keeper.handlerSlotsInUse()).toBe(phases.filter((p) => p === 'offered' || p === 'running').length);
      expect(keeper.offeredCount() > 0).toBe(phases.includes('offered'));
      expect(keeper.unfinished).toBe(phases.filter((p) => p !== 'finished').length);
    }
  });
});
