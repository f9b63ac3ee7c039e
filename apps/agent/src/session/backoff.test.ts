import { backoffDelayMs, RECONNECT_BACKOFF } from './backoff';

describe('backoffDelayMs', () => {
  it('starts at 100 ms, doubles, and is capped at 1 s', () => {
    const top = (attempt: number) => backoffDelayMs(attempt, RECONNECT_BACKOFF, () => 0.999999);
    expect([1, 2, 3, 4, 5, 6, 7, 8].map(top)).toEqual([100, 200, 400, 800, 1000, 1000, 1000, 1000]);
    expect(top(1_000)).toBe(1000);
  });

  it('jitters within the upper half of each step', () => {
    expect(backoffDelayMs(1, RECONNECT_BACKOFF, () => 0)).toBe(50);
    expect(backoffDelayMs(3, RECONNECT_BACKOFF, () => 0.5)).toBe(300);
    expect(backoffDelayMs(20, RECONNECT_BACKOFF, () => 0)).toBe(500);
  });
});
