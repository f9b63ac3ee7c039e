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
  /** This thread's clock (performance.now()), as `trustUntil`. */
  readonly startAt: number;
  trustUntil: number;
}

export class HandlerQueue {
  /** Offers that arrived with their start come, in arrival order. */
  private readonly waiting = new OrderedEntries<Waiting>();
  private lastFreedAt = Number.NEGATIVE_INFINITY;
  /**
   * Staged offers by start. The session stages in start order, so nearly every insertion is an append,
   * and a spike (thousands of one start) comes off the front at O(1) each, where a heap cost a sift per
   * offer.
   */
  private readonly staged = new OrderedEntries<Staged>((entry) => entry.startAt);
  /** Staged offers whose trust window ended before a slot took them (`shift`), until `takeUntrusted`. */
  private untrusted: LeaseOffer[] = [];

  constructor(
    /** Most offers it holds that arrived with their start come; the session never offers more than this beyond the free slots. */
    readonly limit: number,
    private readonly graceMs: number,
    /** Most staged offers it holds (the agent's capacity and pre-dispatch queue: all it may hold). */
    readonly stageLimit: number,
  ) {}

  /** Nothing queued or staged: a slot that frees has nothing to start (read before any clock). */
  get empty(): boolean {
    return this.waiting.size === 0 && this.staged.size === 0;
  }

  /** Whether an offer whose start has come waits for a slot at `now` (queued, or staged and due). */
  anyWaiting(now: number): boolean {
    if (this.waiting.size > 0) return true;
    const staged = this.staged.first();
    return staged !== undefined && staged.startAt <= now;
  }

  /** Queues an offer whose start has come; false when the queue is full (the caller gives it back). */
  add(id: string, offer: LeaseOffer, now: number): boolean {
    if (this.waiting.size >= this.limit || this.waiting.has(id) || this.staged.has(id)) return false;
    this.waiting.add({ id, offer, arrivedAt: now });
    return true;
  }

  /**
   * Stages an offer to start between `startAt` and `trustUntil` (this thread's clock); false when full or
   * already here (the caller gives it back).
   */
  stage(id: string, offer: LeaseOffer, startAt: number, trustUntil: number): boolean {
    if (this.staged.size >= this.stageLimit || this.staged.has(id) || this.waiting.has(id)) return false;
    this.staged.add({ id, offer, startAt, trustUntil });
    return true;
  }

  /**
   * The earliest staged start after `now` (this thread's clock), undefined when none is ahead: when the
   * stage timer must next fire. (A staged offer whose start has passed waits for a slot, and a slot that
   * frees starts it.)
   */
  nextStagedAfter(now: number): number | undefined {
    return this.staged.firstKeyAfter(now);
  }

  /**
   * The next offer to start at `now`, taken off: the queue's first arrival, else the earliest staged start
   * that has come. A staged offer whose trust window has ended is taken off too but never returned: it
   * waits in `takeUntrusted`, to be given back.
   */
  shift(now: number): LeaseOffer | undefined {
    const waiting = this.waiting.shift();
    if (waiting !== undefined) return waiting.offer;
    for (let staged = this.staged.shiftKeyAtMost(now); staged !== undefined; staged = this.staged.shiftKeyAtMost(now)) {
      if (staged.trustUntil > now) return staged.offer;
      this.untrusted.push(staged.offer);
    }
    return undefined;
  }

  /** A renewal moved a staged offer's trust window to `until` (this thread's clock); ignored for any other. */
  trust(id: string, until: number): void {
    const staged = this.staged.get(id);
    if (staged !== undefined && until > staged.trustUntil) staged.trustUntil = until;
  }

  /** Takes the staged offers `shift` found past their trust window. */
  takeUntrusted(): LeaseOffer[] {
    if (this.untrusted.length === 0) return [];
    const offers = this.untrusted;
    this.untrusted = [];
    return offers;
  }

  /** Takes one offer off the queue or the staged ones (lost, aborted); undefined if it is not here. */
  remove(id: string): LeaseOffer | undefined {
    return (this.waiting.delete(id) ?? this.staged.delete(id))?.offer;
  }

  /** Takes every queued and staged offer off (draining, closing). */
  clear(): LeaseOffer[] {
    return [...this.waiting.clear(), ...this.staged.clear()].map((entry) => entry.offer);
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
    // In arrival (start) order, so deadlines only grow along each: the first not yet due ends the search.
    const waiting = this.waiting.shiftWhile((entry) => this.deadlineOf(entry.arrivedAt) <= now);
    const staged = this.staged.shiftWhile((entry) => this.deadlineOf(entry.startAt) <= now);
    return [...waiting, ...staged].map((entry) => entry.offer);
  }

  /** When the first offer becomes overdue, unless slots free first; undefined when none waits or is staged. */
  nextDeadline(): number | undefined {
    const waiting = this.waiting.first();
    const staged = this.staged.first();
    if (waiting === undefined) return staged === undefined ? undefined : this.deadlineOf(staged.startAt);
    const deadline = this.deadlineOf(waiting.arrivedAt);
    return staged === undefined ? deadline : Math.min(deadline, this.deadlineOf(staged.startAt));
  }

  private deadlineOf(since: number): number {
    return startGiveBackAt(since, this.lastFreedAt, this.graceMs);
  }
}

/**
 * Entries by id, in an order kept in an array read from a moving head: the
 * first one is found and taken off in O(1), amortised. Not a Map's own order:
 * taking entries off the front of a Map leaves holes that every later walk
 * from its start steps over (quadratic over a spike). An entry deleted out of
 * order stays in the array until the head passes it, bounded by compaction.
 */
class OrderedEntries<T extends { readonly id: string }> {
  private readonly byId = new Map<string, T>();
  private order: T[] = [];
  private head = 0;

  /** `key`: keep the entries sorted by it (equal keys in insertion order); without it, insertion order. */
  constructor(private readonly key?: (entry: T) => number) {}

  get size(): number {
    return this.byId.size;
  }

  has(id: string): boolean {
    return this.byId.has(id);
  }

  get(id: string): T | undefined {
    return this.byId.get(id);
  }

  add(entry: T): void {
    this.byId.set(entry.id, entry);
    const order = this.order;
    const key = this.key;
    if (key === undefined || order.length === this.head || key(order[order.length - 1]!) <= key(entry)) order.push(entry);
    else order.splice(this.indexAfter(key, key(entry)), 0, entry);
  }

  /**
   * The first key greater than `value` among the entries (sorted by key; an entry deleted out of order
   * may answer: its key is still in order), undefined when none.
   */
  firstKeyAfter(value: number): number | undefined {
    const key = this.key!;
    const index = this.indexAfter(key, value);
    return index < this.order.length ? key(this.order[index]!) : undefined;
  }

  /** The index, from the head, of the first entry whose key is greater than `value` (binary search). */
  private indexAfter(key: (entry: T) => number, value: number): number {
    let low = this.head;
    let high = this.order.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (key(this.order[middle]!) <= value) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  /** The first entry, left in place. */
  first(): T | undefined {
    const order = this.order;
    while (this.head < order.length) {
      const entry = order[this.head]!;
      if (this.byId.get(entry.id) === entry) {
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

  /** The first entry, taken off. */
  shift(): T | undefined {
    const entry = this.first();
    if (entry !== undefined) this.takeFirst(entry);
    return entry;
  }

  /** The first entry if its key is at most `value` (sorted entries), taken off; else undefined. */
  shiftKeyAtMost(value: number): T | undefined {
    const entry = this.first();
    if (entry === undefined || this.key!(entry) > value) return undefined;
    this.takeFirst(entry);
    return entry;
  }

  /** Takes entries off the front while `test` holds for the first; returns them in order. */
  shiftWhile(test: (entry: T) => boolean): T[] {
    const taken: T[] = [];
    for (let entry = this.first(); entry !== undefined && test(entry); entry = this.first()) {
      this.takeFirst(entry);
      taken.push(entry);
    }
    return taken;
  }

  /** Takes off `entry`, which `first` just answered (it is at the head). */
  private takeFirst(entry: T): void {
    this.byId.delete(entry.id);
    this.head++;
  }

  delete(id: string): T | undefined {
    const entry = this.byId.get(id);
    if (entry === undefined) return undefined;
    this.byId.delete(id);
    if (this.order.length - this.head > 2 * this.byId.size + 64) {
      this.order = this.order.filter((item, index) => index >= this.head && this.byId.get(item.id) === item);
      this.head = 0;
    }
    return entry;
  }

  /** Takes every entry off, in order of addition. */
  clear(): T[] {
    const entries = [...this.byId.values()];
    this.byId.clear();
    this.order = [];
    this.head = 0;
    return entries;
  }
}
