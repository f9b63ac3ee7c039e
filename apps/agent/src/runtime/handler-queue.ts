/**
 * The handler thread's own short start queue (decision 0029).
 *
 * When a spike of pre-dispatched jobs is due, the session thread offers the
 * handler thread up to one slot-full more than it has free slots. The extra
 * offers wait here, in arrival order, and start as the handler thread's own
 * slots free: a run that ends starts the next in the same turn, without the
 * round trip to the session thread (an outcome message there, an offer
 * message back) that used to stand between one wave of slots and the next.
 *
 * An offer here counts as started for the rest of the agent (the session has
 * offered it; a cancel answers 409), so the queue keeps the start queue's
 * promise itself: an offer that waits START_GRACE_MS with no slot freeing
 * since it arrived, or START_WAIT_MAX_MS in all, is given back (Release),
 * never started, for an agent with free slots to run.
 *
 * Staged offers (decision 0030) arrive before their start and wait here, by
 * start instant. Once it has come they are part of the queue above: a free
 * slot takes the queue's first arrival, else the earliest staged start that
 * has come; the grace of a staged offer counts from its start. They are not
 * counted against the queue's limit (the session counted them against its
 * start queue when it staged them).
 */
import { startGiveBackAt, type LeaseOffer } from './thread-messages';

/**
 * How many offers the handler thread queues beyond its slots: one slot-full,
 * so that while one wave of short runs is on the handler thread the next is
 * already there, and no more, so that the session's start queue (with its
 * renewals, withdrawals and grace) keeps the rest.
 */
export function handlerQueueLimit(capacity: number): number {
  return capacity;
}

interface Waiting {
  readonly id: string;
  readonly offer: LeaseOffer;
  readonly arrivedAt: number;
}

interface Staged {
  readonly id: string;
  readonly offer: LeaseOffer;
  /** This thread's clock (performance.now()). */
  readonly startAt: number;
}

export class HandlerQueue {
  /** By lease id. */
  private readonly waiting = new Map<string, Waiting>();
  /**
   * Arrival order, from `head`: the first live entry (still in `waiting`) is the next to start. An array
   * with a moving head, not the Map's own order: taking entries off the front of a Map leaves holes that
   * every later walk from its start steps over (quadratic over a spike's queue).
   */
  private order: Waiting[] = [];
  private head = 0;
  private lastFreedAt = Number.NEGATIVE_INFINITY;
  /** Staged offers by lease id. */
  private readonly staged = new Map<string, Staged>();
  /**
   * Staged offers by start, from `stagedHead` (an entry no longer in `staged` is stepped over). Sorted on
   * insertion: the session stages in start order, so nearly every insertion is an append, and a spike
   * (thousands of one start) is taken off the front at O(1) each, where a heap cost a sift per offer.
   */
  private byStart: Staged[] = [];
  private stagedHead = 0;

  constructor(
    /** Most offers it holds that arrived with their start come; the session never offers more than this beyond the free slots. */
    readonly limit: number,
    private readonly graceMs: number,
    /** Most staged offers it holds (the agent's capacity and pre-dispatch queue: all it may hold). */
    readonly stageLimit: number = 0,
  ) {}

  /** Offers that arrived with their start come and wait for a slot (staged ones aside). */
  get size(): number {
    return this.waiting.size;
  }

  /** Whether an offer whose start has come waits for a slot at `now` (queued, or staged and due). */
  anyWaiting(now: number): boolean {
    if (this.waiting.size > 0) return true;
    const staged = this.firstStaged();
    return staged !== undefined && staged.startAt <= now;
  }

  /** Queues an offer whose start has come; false when the queue is full (the caller gives it back). */
  add(id: string, offer: LeaseOffer, now: number): boolean {
    if (this.waiting.size >= this.limit || this.waiting.has(id) || this.staged.has(id)) return false;
    const entry = { id, offer, arrivedAt: now };
    this.waiting.set(id, entry);
    this.order.push(entry);
    return true;
  }

  /** Stages an offer until `startAt` (this thread's clock); false when full or already here (the caller gives it back). */
  stage(id: string, offer: LeaseOffer, startAt: number): boolean {
    if (this.staged.size >= this.stageLimit || this.staged.has(id) || this.waiting.has(id)) return false;
    const entry = { id, offer, startAt };
    this.staged.set(id, entry);
    const byStart = this.byStart;
    if (byStart.length === this.stagedHead || byStart[byStart.length - 1]!.startAt <= startAt) {
      byStart.push(entry);
    } else {
      // After every entry that starts no later: offers of one start keep their arrival order.
      let low = this.stagedHead;
      let high = byStart.length;
      while (low < high) {
        const middle = (low + high) >>> 1;
        if (byStart[middle]!.startAt <= startAt) low = middle + 1;
        else high = middle;
      }
      byStart.splice(low, 0, entry);
    }
    return true;
  }

  /** The earliest staged start (this thread's clock), undefined when none is staged. */
  nextStagedAt(): number | undefined {
    return this.firstStaged()?.startAt;
  }

  /** The next offer to start at `now`, taken off: the queue's first arrival, else the earliest staged start that has come. */
  shift(now: number): LeaseOffer | undefined {
    const entry = this.firstWaiting();
    if (entry !== undefined) {
      this.waiting.delete(entry.id);
      this.head++;
      return entry.offer;
    }
    const staged = this.firstStaged();
    if (staged === undefined || staged.startAt > now) return undefined;
    this.takeStaged(staged);
    return staged.offer;
  }

  /** Takes one offer off the queue or the staged ones (lost, aborted); undefined if it is not here. */
  remove(id: string): LeaseOffer | undefined {
    const entry = this.waiting.get(id) ?? this.staged.get(id);
    if (entry === undefined) return undefined;
    this.waiting.delete(id);
    this.staged.delete(id);
    // Removed entries stay in the arrival order and the heap until they reach the front; bounded here.
    if (this.order.length - this.head > 2 * this.waiting.size + 64) {
      this.order = this.order.filter((item, index) => index >= this.head && this.waiting.get(item.id) === item);
      this.head = 0;
    }
    if (this.byStart.length - this.stagedHead > 2 * this.staged.size + 64) {
      this.byStart = this.byStart.filter((item, index) => index >= this.stagedHead && this.staged.get(item.id) === item);
      this.stagedHead = 0;
    }
    return entry.offer;
  }

  /** Takes every queued and staged offer off (draining, closing). */
  clear(): LeaseOffer[] {
    const offers = [...this.waiting.values(), ...this.staged.values()].map((entry) => entry.offer);
    this.waiting.clear();
    this.order = [];
    this.head = 0;
    this.staged.clear();
    this.byStart = [];
    this.stagedHead = 0;
    return offers;
  }

  /** A slot of the handler thread freed at `now`: the queue moved. */
  slotFreed(now: number): void {
    this.lastFreedAt = now;
  }

  /**
   * Takes off and returns the offers to give back at `now` (`startGiveBackAt`,
   * counted from their arrival here, or a staged one's start).
   */
  overdue(now: number): LeaseOffer[] {
    const late: LeaseOffer[] = [];
    // In arrival (start) order, so deadlines only grow along each: the first not yet due ends the search.
    for (let entry = this.firstWaiting(); entry !== undefined && this.deadlineOf(entry.arrivedAt) <= now; entry = this.firstWaiting()) {
      this.waiting.delete(entry.id);
      this.head++;
      late.push(entry.offer);
    }
    for (let staged = this.firstStaged(); staged !== undefined && this.deadlineOf(staged.startAt) <= now; staged = this.firstStaged()) {
      this.takeStaged(staged);
      late.push(staged.offer);
    }
    return late;
  }

  /** When the first offer becomes overdue, unless slots free first; undefined when none waits or is staged. */
  nextDeadline(): number | undefined {
    const entry = this.firstWaiting();
    const staged = this.firstStaged();
    const deadlines = [entry && this.deadlineOf(entry.arrivedAt), staged && this.deadlineOf(staged.startAt)].filter((d) => d !== undefined);
    return deadlines.length === 0 ? undefined : Math.min(...deadlines);
  }

  private deadlineOf(since: number): number {
    return startGiveBackAt(since, this.lastFreedAt, this.graceMs);
  }

  /** The earliest arrival still waiting; entries taken off meanwhile are stepped over and the array compacted. */
  private firstWaiting(): Waiting | undefined {
    const order = this.order;
    while (this.head < order.length) {
      const entry = order[this.head]!;
      if (this.waiting.get(entry.id) === entry) {
        if (this.head >= 1024 && this.head * 2 >= order.length) {
          this.order = order.slice(this.head);
          this.head = 0;
        }
        return entry;
      }
      this.head++;
    }
    this.order = [];
    this.head = 0;
    return undefined;
  }

  /** The earliest staged start still here; entries taken off meanwhile are stepped over and the array compacted. */
  private firstStaged(): Staged | undefined {
    const byStart = this.byStart;
    while (this.stagedHead < byStart.length) {
      const entry = byStart[this.stagedHead]!;
      if (this.staged.get(entry.id) === entry) {
        if (this.stagedHead >= 1024 && this.stagedHead * 2 >= byStart.length) {
          this.byStart = byStart.slice(this.stagedHead);
          this.stagedHead = 0;
        }
        return entry;
      }
      this.stagedHead++;
    }
    this.byStart = [];
    this.stagedHead = 0;
    return undefined;
  }

  /** Takes `staged` (`firstStaged`'s answer) off. */
  private takeStaged(staged: Staged): void {
    this.stagedHead++;
    this.staged.delete(staged.id);
  }
}
