/**
 * The offset between this thread's monotonic clock and the database's clock,
 * for pre-dispatched assignments, which name their start as a database
 * instant (Assignment.start_at_ms).
 *
 * Every Welcome and RenewReply carries the coordinator's estimate of the
 * database clock at the moment it sent the message (db_time_ms), which is
 * never ahead of the database (db-clock.ts reads it as a lower bound), how
 * much it may lag (db_time_error_ms), and how long the coordinator held the
 * agent's message before stamping it (held_ms). The stamp was made before the
 * reply arrived, so `db_time_ms - arrival` is a LOWER bound of the offset:
 * converted with it, a start instant is never early, only late by the reply's
 * flight time and the coordinator's error. The midpoint of send and arrival
 * would be unbiased only on a symmetric path; under load it is not (the
 * coordinator's event loop delays the heartbeat, not the reply), and in the
 * bench's idle workload it started jobs 3 to 9 ms early. The tightest (the
 * largest) lower bound among the last `keep` readings wins; the session takes
 * eight extra readings in its first two seconds (CLOCK_SYNC_BEATS_MS), so the
 * window fills with readings of a connected, warm stream.
 *
 * `errorMs` bounds how late: the network part of the best reading's round
 * trip (arrival - send - held) plus the coordinator's error; on one machine
 * or a LAN, about a millisecond. Drift between two clocks is tens of parts
 * per million: under a millisecond over the window kept. The session logs
 * it with every pre-dispatched start it times.
 *
 * No I/O and no clock of its own: callers pass monotonic readings.
 */
interface Sample {
  /** A lower bound of database epoch ms minus monotonic ms. */
  readonly offsetMs: number;
  readonly errorMs: number;
}

export class DbOffset {
  private readonly samples: Sample[] = [];
  private best: Sample | undefined;

  constructor(private readonly keep = 8) {}

  /**
   * One reading: `dbTimeMs` was stamped `heldMs` after the message sent at
   * `sentAt` reached the coordinator, and the reply arrived at `receivedAt`
   * (monotonic ms). Ignored when unknown (0).
   */
  record(dbTimeMs: number, dbErrorMs: number, sentAt: number, receivedAt: number, heldMs = 0): void {
    if (!(dbTimeMs > 0) || !Number.isFinite(dbTimeMs) || receivedAt < sentAt) return;
    const held = Number.isFinite(heldMs) && heldMs > 0 ? Math.min(heldMs, receivedAt - sentAt) : 0;
    const error = receivedAt - sentAt - held + (Number.isFinite(dbErrorMs) && dbErrorMs > 0 ? dbErrorMs : 0);
    this.samples.push({ offsetMs: dbTimeMs - receivedAt, errorMs: error });
    if (this.samples.length > this.keep) this.samples.shift();
    this.best = this.samples.reduce((a, b) => (b.offsetMs > a.offsetMs ? b : a));
  }

  /** The monotonic time at which the database clock reads `dbMs`, never before it; undefined before the first reading. */
  toLocal(dbMs: number): number | undefined {
    return this.best === undefined ? undefined : dbMs - this.best.offsetMs;
  }

  /** How late `toLocal` may be, in ms (Infinity before the first reading). */
  get errorMs(): number {
    return this.best?.errorMs ?? Number.POSITIVE_INFINITY;
  }
}
