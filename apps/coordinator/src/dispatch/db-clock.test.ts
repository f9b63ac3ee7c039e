import { createDbClock } from './db-clock';

/** A monotonic clock the test moves by hand, and a database read that takes `tookMs` of it. */
function fakeTime(dbAheadMs: number) {
  let nowMs = 1_000;
  let tookMs = 0;
  let readAtMs = 0; // how far into the round trip the database reads its clock
  return {
    now: () => nowMs,
    set: (took: number, readAt: number) => {
      tookMs = took;
      readAtMs = readAt;
    },
    advance: (ms: number) => (nowMs += ms),
    read: async () => {
      const db = nowMs + readAtMs + dbAheadMs;
      nowMs += tookMs;
      return db;
    },
  };
}

describe('createDbClock', () => {
  it('is unknown until read, then never ahead of the database and behind it by at most the round trip', async () => {
    const time = fakeTime(5_000_000);
    const clock = createDbClock(time.read, { now: time.now });
    expect(clock.nowMs()).toBe(0);
    expect(clock.errorMs()).toBe(Number.POSITIVE_INFINITY);
    time.set(4, 1); // read 1 ms into a 4 ms round trip
    await clock.sample();
    expect(clock.errorMs()).toBe(4);
    time.advance(100);
    const truth = time.now() + 5_000_000;
    expect(clock.nowMs()).toBe(truth - 3);
  });

  it('keeps the tightest lower bound: a reading whose answer came back late is outvoted', async () => {
    const time = fakeTime(5_000_000);
    const clock = createDbClock(time.read, { now: time.now });
    time.set(2, 1);
    await clock.sample();
    time.set(30, 0); // read at once, answer 30 ms later (a busy event loop)
    await clock.sample();
    expect(clock.errorMs()).toBe(2);
    expect(clock.nowMs()).toBe(time.now() + 5_000_000 - 1);
  });
});
