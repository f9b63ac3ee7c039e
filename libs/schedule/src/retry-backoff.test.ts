import { jittered, retryBackoffMs, stableFraction } from './retry-backoff';

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

  it('takes a multiplier (1 = a constant delay)', () => {
    expect([1, 2, 3].map((attempt) => retryBackoffMs(attempt, { baseMs: 100, multiplier: 3 }))).toEqual([100, 300, 900]);
    expect([1, 5].map((attempt) => retryBackoffMs(attempt, { baseMs: 250, multiplier: 1 }))).toEqual([250, 250]);
    expect([1, 2].map((attempt) => retryBackoffMs(attempt, { baseMs: 1000, multiplier: 1.5 }))).toEqual([1000, 1500]);
    expect(() => retryBackoffMs(1, { multiplier: 0.5 })).toThrow(RangeError);
  });

  it('jitters deterministically: the same parts give the same fraction, different parts spread over [0, 1)', () => {
    expect(stableFraction('job', 3)).toBe(stableFraction('job', 3));
    const fractions = Array.from({ length: 2000 }, (_, i) => stableFraction('job', i));
    expect(Math.min(...fractions)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...fractions)).toBeLessThan(1);
    // Evenly spread: each tenth of [0, 1) holds about a tenth of them.
    for (let decile = 0; decile < 10; decile++) {
      const inDecile = fractions.filter((f) => f >= decile / 10 && f < (decile + 1) / 10).length;
      expect(inDecile).toBeGreaterThan(140);
      expect(inDecile).toBeLessThan(260);
    }
    expect(jittered(1000, 0.2, 0)).toBe(1000);
    expect(jittered(1000, 0.2, 0.5)).toBe(900);
    expect(jittered(1000, 0, 0.99)).toBe(1000);
    expect(() => jittered(1000, 1.5, 0.5)).toThrow(RangeError);
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
