import { parseCron } from './cron-schedule';
import { firstOccurrence, nextOccurrence } from './occurrences';
import { ScheduleValidationError } from './schedule-validation-error';

const at = (iso: string): Date => new Date(iso);
const iso = (date: Date | null): string | null => (date === null ? null : date.toISOString());

/** The next `count` occurrences after `from`, as ISO strings. */
function following(expression: string, timezone: string, from: string, count: number): (string | null)[] {
  const schedule = parseCron(expression, timezone);
  const found: (string | null)[] = [];
  let cursor: Date | null = at(from);
  for (let index = 0; index < count && cursor !== null; index++) {
    cursor = nextOccurrence(schedule, cursor);
    found.push(iso(cursor));
  }
  return found;
}

describe('nextOccurrence in UTC', () => {
  it('steps a 5-field schedule', () => {
    expect(following('*/15 * * * *', 'UTC', '2026-05-04T10:07:00Z', 3)).toEqual([
      '2026-05-04T10:15:00.000Z',
      '2026-05-04T10:30:00.000Z',
      '2026-05-04T10:45:00.000Z',
    ]);
  });

  it('is strictly after its argument, even exactly on an occurrence', () => {
    const schedule = parseCron('*/15 * * * *');
    expect(iso(nextOccurrence(schedule, at('2026-05-04T10:15:00.000Z')))).toBe('2026-05-04T10:30:00.000Z');
    expect(iso(nextOccurrence(schedule, at('2026-05-04T10:14:59.999Z')))).toBe('2026-05-04T10:15:00.000Z');
  });

  it('steps a 6-field schedule', () => {
    expect(following('*/20 * * * * *', 'UTC', '2026-05-04T10:00:05Z', 4)).toEqual([
      '2026-05-04T10:00:20.000Z',
      '2026-05-04T10:00:40.000Z',
      '2026-05-04T10:01:00.000Z',
      '2026-05-04T10:01:20.000Z',
    ]);
    expect(following('30 0 9 * * 1-5', 'UTC', '2026-05-08T12:00:00Z', 2)).toEqual([
      '2026-05-11T09:00:30.000Z',
      '2026-05-12T09:00:30.000Z',
    ]);
  });

  it('handles month ends, leap days and nth weekdays', () => {
    expect(following('0 12 L * *', 'UTC', '2026-02-10T00:00:00Z', 2)).toEqual(['2026-02-28T12:00:00.000Z', '2026-03-31T12:00:00.000Z']);
    expect(following('0 0 29 2 *', 'UTC', '2026-01-01T00:00:00Z', 2)).toEqual(['2028-02-29T00:00:00.000Z', '2032-02-29T00:00:00.000Z']);
    expect(following('0 0 * * 1#1', 'UTC', '2026-05-01T00:00:00Z', 2)).toEqual(['2026-05-04T00:00:00.000Z', '2026-06-01T00:00:00.000Z']);
    expect(following('0 0 * * 5L', 'UTC', '2026-05-01T00:00:00Z', 1)).toEqual(['2026-05-29T00:00:00.000Z']);
  });

  it('ORs day-of-month and day-of-week when both are restricted', () => {
    // The 13th, or any Friday.
    expect(following('0 0 13 * 5', 'UTC', '2026-05-07T00:00:00Z', 3)).toEqual([
      '2026-05-08T00:00:00.000Z',
      '2026-05-13T00:00:00.000Z',
      '2026-05-15T00:00:00.000Z',
    ]);
  });

  it('finds rare occurrences decades apart', () => {
    // The fifth Monday of February: only when 29 February is a Monday.
    expect(following('0 0 * 2 1#5', 'UTC', '2017-01-01T00:00:00Z', 3)).toEqual([
      '2044-02-29T00:00:00.000Z',
      '2072-02-29T00:00:00.000Z',
      '2112-02-29T00:00:00.000Z',
    ]);
  });

  it('returns null when the horizon runs past year 9999', () => {
    expect(nextOccurrence(parseCron('0 0 1 1 *'), at('9999-06-01T00:00:00Z'))).toBeNull();
  });
});

describe('nextOccurrence in zones', () => {
  it('reads the expression as local time', () => {
    expect(following('0 9 * * *', 'Asia/Tokyo', '2026-05-04T00:00:00Z', 1)).toEqual(['2026-05-05T00:00:00.000Z']);
    expect(following('0 9 * * *', 'Asia/Kolkata', '2026-05-04T00:00:00Z', 1)).toEqual(['2026-05-04T03:30:00.000Z']);
    expect(following('0 9 * * *', 'America/New_York', '2026-07-01T00:00:00Z', 1)).toEqual(['2026-07-01T13:00:00.000Z']);
    expect(following('0 9 * * *', 'America/New_York', '2026-01-01T00:00:00Z', 1)).toEqual(['2026-01-01T14:00:00.000Z']);
    expect(following('0 9 * * *', 'Etc/GMT+5', '2026-07-01T00:00:00Z', 1)).toEqual(['2026-07-01T14:00:00.000Z']);
  });

  it('uses the local calendar for days and weekdays', () => {
    // Monday 00:30 in Tokyo is Sunday 15:30 UTC.
    expect(following('30 0 * * 1', 'Asia/Tokyo', '2026-05-01T00:00:00Z', 2)).toEqual([
      '2026-05-03T15:30:00.000Z',
      '2026-05-10T15:30:00.000Z',
    ]);
    // The last day of the month in Los Angeles, 23:00 local, is the 1st in UTC.
    expect(following('0 23 L * *', 'America/Los_Angeles', '2026-04-15T00:00:00Z', 1)).toEqual(['2026-05-01T06:00:00.000Z']);
  });

  it('handles 6-field schedules in a zone', () => {
    expect(following('15 30 8 * * *', 'Europe/Berlin', '2026-05-04T00:00:00Z', 2)).toEqual([
      '2026-05-04T06:30:15.000Z',
      '2026-05-05T06:30:15.000Z',
    ]);
  });
});

describe('firstOccurrence', () => {
  const schedule = parseCron('*/15 * * * *');

  it('serves an occurrence the job is created exactly on', () => {
    expect(iso(firstOccurrence(schedule, at('2026-05-04T10:15:00.000Z')))).toBe('2026-05-04T10:15:00.000Z');
  });

  it('otherwise takes the next one', () => {
    expect(iso(firstOccurrence(schedule, at('2026-05-04T10:15:00.001Z')))).toBe('2026-05-04T10:30:00.000Z');
    expect(iso(firstOccurrence(schedule, at('2026-05-04T10:07:00Z')))).toBe('2026-05-04T10:15:00.000Z');
  });

  it('works in zones and with seconds', () => {
    expect(iso(firstOccurrence(parseCron('0 0 9 * * *', 'Asia/Tokyo'), at('2026-05-04T00:00:00Z')))).toBe('2026-05-04T00:00:00.000Z');
    expect(iso(firstOccurrence(parseCron('0 9 * * *', 'Asia/Tokyo'), at('2026-05-04T00:00:01Z')))).toBe('2026-05-05T00:00:00.000Z');
  });

  it('throws RangeError when nothing is left before year 10000', () => {
    expect(() => firstOccurrence(parseCron('0 0 1 1 *'), at('9999-06-01T00:00:00Z'))).toThrow(RangeError);
  });
});

describe('bad arguments', () => {
  it('rejects invalid dates with RangeError', () => {
    const schedule = parseCron('* * * * *');
    expect(() => nextOccurrence(schedule, new Date(Number.NaN))).toThrow(RangeError);
    expect(() => firstOccurrence(schedule, new Date(Number.NaN))).toThrow(RangeError);
    expect(() => nextOccurrence(schedule, new Date(8.64e15))).toThrow(RangeError);
  });

  it('re-checks hand-built schedules', () => {
    const now = at('2026-05-04T00:00:00Z');
    expect(() => nextOccurrence({ expression: '* * *', timezone: 'UTC' }, now)).toThrow(ScheduleValidationError);
    expect(() => nextOccurrence({ expression: '0 0 30 2 *', timezone: 'UTC' }, now)).toThrow(ScheduleValidationError);
    expect(() => firstOccurrence({ expression: '* * * * *', timezone: 'Nowhere/Land' }, now)).toThrow(ScheduleValidationError);
  });
});
