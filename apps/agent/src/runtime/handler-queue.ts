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
  readonly offer: LeaseOffer;
  readonly arrivedAt: number;
}

export class HandlerQueue {
  /** By lease id, in arrival order (a Map keeps insertion order): the first entry is the next to start. */
  private readonly waiting = new Map<string, Waiting>();
  private lastFreedAt = Number.NEGATIVE_INFINITY;

  constructor(
    /** Most offers it holds; the session never offers more than this beyond the free slots. */
    readonly limit: number,
    private readonly graceMs: number,
  ) {}

  get size(): number {
    return this.waiting.size;
  }

  /** Queues an offer; false when the queue is full (the caller gives it back). */
  add(id: string, offer: LeaseOffer, now: number): boolean {
    if (this.waiting.size >= this.limit || this.waiting.has(id)) return false;
    this.waiting.set(id, { offer, arrivedAt: now });
    return true;
  }

  /** The next offer to start (the earliest arrival), taken off the queue. */
  shift(): LeaseOffer | undefined {
    for (const [id, entry] of this.waiting) {
      this.waiting.delete(id);
      return entry.offer;
    }
    return undefined;
  }

  /** Takes one offer off the queue (lost, aborted); undefined if it is not here. */
  remove(id: string): LeaseOffer | undefined {
    const entry = this.waiting.get(id);
    if (entry === undefined) return undefined;
    this.waiting.delete(id);
    return entry.offer;
  }

  /** Takes every offer off the queue (draining, closing). */
  clear(): LeaseOffer[] {
    const offers = [...this.waiting.values()].map((entry) => entry.offer);
    this.waiting.clear();
    return offers;
  }

  /** A slot of the handler thread freed at `now`: the queue moved. */
  slotFreed(now: number): void {
    this.lastFreedAt = now;
  }

  /**
   * Takes off and returns the offers to give back at `now` (`startGiveBackAt`,
   * counted from their arrival here).
   */
  overdue(now: number): LeaseOffer[] {
    const late: LeaseOffer[] = [];
    for (const [id, entry] of this.waiting) {
      // In arrival order, so deadlines only grow along the queue: the first not yet due ends the search.
      if (this.deadlineOf(entry) > now) break;
      this.waiting.delete(id);
      late.push(entry.offer);
    }
    return late;
  }

  /** When the first offer becomes overdue, unless slots free first; undefined when empty. */
  nextDeadline(): number | undefined {
    for (const entry of this.waiting.values()) return this.deadlineOf(entry);
    return undefined;
  }

  private deadlineOf(entry: Waiting): number {
    return startGiveBackAt(entry.arrivedAt, this.lastFreedAt, this.graceMs);
  }
}
