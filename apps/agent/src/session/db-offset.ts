/**
 * The offset between this thread's monotonic clock and the database's clock,
 * for pre-dispatched assignments, which name their start as a database
 * instant (Assignment.start_at_ms).
 *
 * Every Welcome and RenewReply carries the coordinator's estimate of the
 * database clock at the moment it sent the message (db_time_ms), and how far
 * off that estimate may be (db_time_error_ms). The message was sent after the
 * agent's Hello or Heartbeat left (`sentAt`) and before it arrived
 * (`receivedAt`), so the offset lies within half the round trip of the
 * midpoint, plus the coordinator's error. The sample with the smallest bound
 * among the last `keep` wins: one delayed reply is outvoted, not averaged in.
 *
 * Accuracy: on a LAN the round trip of a heartbeat is well under a
 * millisecond plus the coordinator's renewal statement (which the reply waits
 * for), so the bound is a few milliseconds at worst; `errorMs` says what it is
 * now (the session logs it with every pre-dispatched start it times). Drift between two clocks is tens of parts per million: under a
 * millisecond over the window kept.
 *
 * No I/O and no clock of its own: callers pass monotonic readings.
 */
interface Sample {
  /** Database epoch ms minus monotonic ms. */
  readonly offsetMs: number;
  readonly errorMs: number;
}

export class DbOffset {
  private readonly samples: Sample[] = [];
  private best: Sample | undefined;

  constructor(private readonly keep = 8) {}

  /** One reading: `dbTimeMs` was stamped between `sentAt` and `receivedAt` (monotonic ms). Ignored when unknown (0). */
  record(dbTimeMs: number, dbErrorMs: number, sentAt: number, receivedAt: number): void {
    if (!(dbTimeMs > 0) || !Number.isFinite(dbTimeMs) || receivedAt < sentAt) return;
    const error = (receivedAt - sentAt) / 2 + (Number.isFinite(dbErrorMs) && dbErrorMs > 0 ? dbErrorMs : 0);
    this.samples.push({ offsetMs: dbTimeMs - (sentAt + receivedAt) / 2, errorMs: error });
    if (this.samples.length > this.keep) this.samples.shift();
    this.best = this.samples.reduce((a, b) => (b.errorMs < a.errorMs ? b : a));
  }

  /** The monotonic time at which the database clock reads `dbMs`; undefined before the first reading. */
  toLocal(dbMs: number): number | undefined {
    return this.best === undefined ? undefined : dbMs - this.best.offsetMs;
  }

  /** How far `toLocal` may be off, in ms (Infinity before the first reading). */
  get errorMs(): number {
    return this.best?.errorMs ?? Number.POSITIVE_INFINITY;
  }
}
