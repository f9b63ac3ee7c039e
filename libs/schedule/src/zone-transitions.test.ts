import { zoneOffsetMs } from './zone-offset';
import { zoneTransitionsBetween } from './zone-transitions';

const HOUR_MS = 3_600_000;

describe('zoneOffsetMs', () => {
  it('reads offsets east of UTC as positive', () => {
    expect(zoneOffsetMs('Europe/Berlin', Date.parse('2026-01-15T12:00:00Z'))).toBe(HOUR_MS);
    expect(zoneOffsetMs('Europe/Berlin', Date.parse('2026-07-15T12:00:00Z'))).toBe(2 * HOUR_MS);
    expect(zoneOffsetMs('America/New_York', Date.parse('2026-01-15T12:00:00Z'))).toBe(-5 * HOUR_MS);
    expect(zoneOffsetMs('Asia/Kolkata', Date.parse('2026-01-15T12:00:00.999Z'))).toBe(5.5 * HOUR_MS);
    expect(zoneOffsetMs('UTC', Date.parse('2026-01-15T12:00:00Z'))).toBe(0);
  });

  it('keeps the seconds of local mean time and handles years before 1 CE', () => {
    expect(zoneOffsetMs('Europe/Berlin', Date.parse('1850-06-01T00:00:00Z'))).toBe((53 * 60 + 28) * 1000);
    expect(zoneOffsetMs('Europe/Berlin', Date.parse('0000-06-01T00:00:00Z'))).toBe((53 * 60 + 28) * 1000);
    expect(zoneOffsetMs('America/New_York', Date.parse('-000100-06-01T00:00:00Z'))).toBe(-(4 * 3600 + 56 * 60 + 2) * 1000);
  });
});

describe('zoneTransitionsBetween', () => {
  it('finds both 2026 changes in Berlin to the second', () => {
    expect(zoneTransitionsBetween('Europe/Berlin', Date.parse('2026-01-01T00:00:00Z'), Date.parse('2027-01-01T00:00:00Z'))).toEqual([
      { atMs: Date.parse('2026-03-29T01:00:00Z'), offsetBeforeMs: HOUR_MS, offsetAfterMs: 2 * HOUR_MS },
      { atMs: Date.parse('2026-10-25T01:00:00Z'), offsetBeforeMs: 2 * HOUR_MS, offsetAfterMs: HOUR_MS },
    ]);
  });

  it('finds both 2026 changes in New York', () => {
    expect(zoneTransitionsBetween('America/New_York', Date.parse('2026-01-01T00:00:00Z'), Date.parse('2027-01-01T00:00:00Z'))).toEqual([
      { atMs: Date.parse('2026-03-08T07:00:00Z'), offsetBeforeMs: -5 * HOUR_MS, offsetAfterMs: -4 * HOUR_MS },
      { atMs: Date.parse('2026-11-01T06:00:00Z'), offsetBeforeMs: -4 * HOUR_MS, offsetAfterMs: -5 * HOUR_MS },
    ]);
  });

  it('treats the range as (from, until]', () => {
    const atMs = Date.parse('2026-03-29T01:00:00Z');
    expect(zoneTransitionsBetween('Europe/Berlin', atMs, atMs + HOUR_MS)).toEqual([]);
    expect(zoneTransitionsBetween('Europe/Berlin', atMs - 1, atMs)).toHaveLength(1);
    expect(zoneTransitionsBetween('Europe/Berlin', atMs - HOUR_MS, atMs - 1)).toEqual([]);
  });

  it('finds none in zones without DST', () => {
    expect(zoneTransitionsBetween('Asia/Tokyo', Date.parse('2026-01-01T00:00:00Z'), Date.parse('2027-01-01T00:00:00Z'))).toEqual([]);
    expect(zoneTransitionsBetween('UTC', Date.parse('2026-01-01T00:00:00Z'), Date.parse('2027-01-01T00:00:00Z'))).toEqual([]);
  });

  it('finds a whole skipped day (Pacific/Apia, end of 2011)', () => {
    const [skip] = zoneTransitionsBetween('Pacific/Apia', Date.parse('2011-12-25T00:00:00Z'), Date.parse('2012-01-05T00:00:00Z'));
    expect(skip).toEqual({ atMs: Date.parse('2011-12-30T10:00:00Z'), offsetBeforeMs: -10 * HOUR_MS, offsetAfterMs: 14 * HOUR_MS });
  });
});
