import { ScheduleValidationError } from './schedule-validation-error';
import { validateTimezone } from './timezone';

function rejection(run: () => unknown): ScheduleValidationError {
  try {
    run();
  } catch (error: unknown) {
    if (error instanceof ScheduleValidationError) return error;
    throw error;
  }
  throw new Error('expected a ScheduleValidationError, but nothing was thrown');
}

describe('validateTimezone', () => {
  it('defaults to UTC when absent', () => {
    expect(validateTimezone(undefined)).toBe('UTC');
  });

  it.each(['UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Tokyo', 'Etc/GMT+5'])(
    'accepts %s unchanged',
    (zone) => {
      expect(validateTimezone(zone)).toBe(zone);
    },
  );

  it('returns the canonical spelling', () => {
    expect(validateTimezone('europe/berlin')).toBe('Europe/Berlin');
    expect(validateTimezone('utc')).toBe('UTC');
    expect(validateTimezone('Etc/UTC')).toBe('UTC');
    expect(validateTimezone('US/Eastern')).toBe('America/New_York');
    expect(validateTimezone('America/Argentina/Buenos_Aires')).toBe('America/Buenos_Aires');
    // Same answer the second time (served from the cache).
    expect(validateTimezone('EUROPE/BERLIN')).toBe('Europe/Berlin');
  });

  it.each([
    ['Mars/Olympus_Mons', /is not a known IANA time zone/],
    ['Europe/Berlinn', /is not a known IANA time zone/],
    ['', /must be an IANA time zone name/],
    [' UTC', /must be an IANA time zone name/],
    ['UTC ', /must be an IANA time zone name/],
    ['+02:00', /must be an IANA time zone name/],
    ['-05:00', /must be an IANA time zone name/],
    ['Europe/../Berlin', /must be an IANA time zone name|is not a known/],
    [`Europe/${'x'.repeat(100)}`, /must be an IANA time zone name/],
    [null, /must be an IANA time zone name .*; got null/],
    [2, /got number 2/],
    [{}, /got a value of type object/],
  ])('rejects %p', (value, message) => {
    const error = rejection(() => validateTimezone(value));
    expect(error.field).toBe('timezone');
    expect(error.message).toMatch(/^timezone /);
    expect(error.message).toMatch(message);
  });

  it('uses the field name it is given', () => {
    expect(rejection(() => validateTimezone('Nowhere/Land', 'tz')).field).toBe('tz');
  });
});
