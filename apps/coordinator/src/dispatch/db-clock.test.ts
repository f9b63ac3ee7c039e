import { createDbClock } from './db-clock';

describe('createDbClock', () => {
  it('is unknown until read, then follows the database clock from the reading with the shortest round trip', async () => {
    let dbAheadMs = 5_000_000;
    const clock = createDbClock(async () => performance.now() + dbAheadMs);
    expect(clock.nowMs()).toBe(0);
    expect(clock.errorMs()).toBe(Number.POSITIVE_INFINITY);
    await clock.sample();
    // Never ahead of the database; behind it by at most the reading's round trip.
    const truth = performance.now() + dbAheadMs;
    const estimate = clock.nowMs();
    expect(estimate).toBeLessThanOrEqual(truth);
    expect(truth - estimate).toBeLessThanOrEqual(clock.errorMs() + 1);
    // A reading whose answer took long loses to the quick one.
    dbAheadMs = 5_000_000;
    const slow = createDbClock(async () => {
      const value = performance.now() + dbAheadMs;
      await new Promise((resolve) => setTimeout(resolve, 30));
      return value;
    });
    await slow.sample();
    expect(slow.errorMs()).toBeGreaterThanOrEqual(15);
  });
});
