import { retryBackoffMs } from './retry-backoff';

describe('retryBackoffMs', () => {
  it('doubles from 1 s per failed attempt', () => {
    expect([1, 2, 3, 4, 5].map((attempt) => retryBackoffMs(attempt))).toEqual([1000, 2000, 4000, 8000, 16_000]);
  });

  it('caps at one hour by default', () => {
    expect(retryBackoffMs(12)).toBe(2_048_000);
    expect(retryBackoffMs(13)).toBe(3_600_000);
    expect(retryBackoffMs(10_000)).toBe(3_600_000);
  });

  it('takes a base and a cap', () => {
    const opts = { baseMs: 500, capMs: 10_000 };
    expect([1, 2, 5, 6, 50].map((attempt) => retryBackoffMs(attempt, opts))).toEqual([500, 1000, 8000, 10_000, 10_000]);
    expect(retryBackoffMs(3, { baseMs: 0 })).toBe(0);
    expect(retryBackoffMs(1, { baseMs: 5000, capMs: 2000 })).toBe(2000);
  });

  it('is deterministic', () => {
    expect(retryBackoffMs(7)).toBe(retryBackoffMs(7));
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('rejects attempt %p', (attempt) => {
    expect(() => retryBackoffMs(attempt)).toThrow(RangeError);
  });

  it('rejects negative or non-finite options', () => {
    expect(() => retryBackoffMs(1, { baseMs: -1 })).toThrow(RangeError);
    expect(() => retryBackoffMs(1, { capMs: Number.NaN })).toThrow(RangeError);
  });
});
