/**
 * The coordinator's estimate of the database clock, for pre-dispatch: agents
 * start pre-dispatched runs at a due instant of the DATABASE's clock, so they
 * need its offset from their own, and learn it from `db_time_ms` in Welcome
 * and every RenewReply (agent.proto). This module supplies that value.
 *
 * A reading is one `clock_timestamp()` query: the database's clock was read
 * somewhere between sending the query and receiving the answer, so `db -
 * arrival` is a lower bound of the offset: the estimate is never ahead of the
 * database (agents must never start a pre-dispatched job early), and behind
 * it by at most the reading's round trip. Readings are taken every
 * `intervalMs`; the tightest (largest) lower bound among the last `keep` wins,
 * so a reading delayed by a busy pool or event loop is simply outvoted. Clock
 * drift between readings (tens of parts per million) is far below a
 * millisecond over the window.
 */

export interface DbClock {
  /** The database clock now (epoch ms), or 0 before the first reading. */
  nowMs(): number;
  /** How far behind the database `nowMs` may be: the round trip of the reading in use (ms); Infinity before the first. */
  errorMs(): number;
  /** Takes a reading now (also called by the timer). */
  sample(): Promise<void>;
  start(): void;
  stop(): void;
}

interface Reading {
  /** A lower bound of database ms minus this process's monotonic ms. */
  offsetMs: number;
  errorMs: number;
}

export function createDbClock(
  read: () => Promise<number>,
  options: { intervalMs?: number; keep?: number; /** Monotonic clock in ms (tests); default performance.now. */ now?: () => number } = {},
): DbClock {
  const now = options.now ?? (() => performance.now());
  const intervalMs = options.intervalMs ?? 5_000;
  const keep = options.keep ?? 12;
  const readings: Reading[] = [];
  let best: Reading | undefined;
  let timer: NodeJS.Timeout | undefined;

  async function sample(): Promise<void> {
    const sentAt = now();
    const dbMs = await read();
    const receivedAt = now();
    readings.push({ offsetMs: dbMs - receivedAt, errorMs: receivedAt - sentAt });
    if (readings.length > keep) readings.shift();
    best = readings.reduce((a, b) => (b.offsetMs > a.offsetMs ? b : a));
  }

  return {
    nowMs: () => (best === undefined ? 0 : now() + best.offsetMs),
    errorMs: () => best?.errorMs ?? Number.POSITIVE_INFINITY,
    sample,
    start() {
      if (timer !== undefined) return;
      // Three quick readings first, so the first agents get a tight estimate.
      void (async () => {
        for (let i = 0; i < 3; i++) await sample().catch(() => undefined);
      })();
      timer = setInterval(() => void sample().catch(() => undefined), intervalMs);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
}
