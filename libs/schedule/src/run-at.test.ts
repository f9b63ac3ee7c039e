import { parseRunAt } from './run-at';
import { ScheduleValidationError } from './schedule-validation-error';

function rejection(run: () => unknown): ScheduleValidationError {
  try {
    run();
  } catch (error: unknown) {
    if (error instanceof ScheduleValidationError) return error;
    throw error;
  }
  throw new Error('expected a ScheduleValidationError, but nothing was thrown');
}

describe('parseRunAt', () => {
  it.each([
    ['2026-03-01T09:30:00Z', '2026-03-01T09:30:00.000Z'],
    ['2026-03-01T09:30:00.123+02:00', '2026-03-01T07:30:00.123Z'],
    ['2026-03-01T09:30:00-05:30', '2026-03-01T15:00:00.000Z'],
    ['2026-03-01t09:30:00z', '2026-03-01T09:30:00.000Z'],
    ['2026-03-01T09:30:00-00:00', '2026-03-01T09:30:00.000Z'],
    ['2026-03-01T09:30:00.5Z', '2026-03-01T09:30:00.500Z'],
    ['2026-03-01T09:30:00.123456789Z', '2026-03-01T09:30:00.123Z'],
    ['2024-02-29T23:59:59Z', '2024-02-29T23:59:59.000Z'],
    ['2000-02-29T00:00:00Z', '2000-02-29T00:00:00.000Z'],
    ['1970-01-01T00:00:00Z', '1970-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59Z', '9999-12-31T23:59:59.000Z'],
    ['2026-01-01T00:30:00+01:00', '2025-12-31T23:30:00.000Z'],
  ])('reads %s', (text, iso) => {
    expect(parseRunAt(text).toISOString()).toBe(iso);
  });

  it.each([
    ['0001-01-01T00:00:00Z', /must lie between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z/],
    ['0099-06-01T00:00:00Z', /must lie between/],
    ['0000-01-01T00:00:00+01:00', /must lie between/],
    ['1969-12-31T23:59:59Z', /must lie between/],
    ['9999-12-31T23:00:00-05:00', /must lie between/],
    ['2026-03-01', /must be an RFC 3339 timestamp with an offset/],
    ['2026-03-01T09:30:00', /must be an RFC 3339 timestamp with an offset/],
    ['2026-03-01 09:30:00Z', /must be an RFC 3339 timestamp with an offset/],
    ['2026-03-01T09:30Z', /must be an RFC 3339 timestamp with an offset/],
    ['2026-3-1T09:30:00Z', /must be an RFC 3339 timestamp with an offset/],
    ['2026-03-01T09:30:00+0200', /must be an RFC 3339 timestamp with an offset/],
    ['2026-03-01T09:30:00.Z', /must be an RFC 3339 timestamp with an offset/],
    [' 2026-03-01T09:30:00Z', /must be an RFC 3339 timestamp with an offset/],
    ['Sun, 01 Mar 2026 09:30:00 GMT', /must be an RFC 3339 timestamp with an offset/],
    ['1772357400000', /must be an RFC 3339 timestamp with an offset/],
    ['+002026-03-01T09:30:00Z', /must be an RFC 3339 timestamp with an offset/],
    ['2026-02-30T00:00:00Z', /day 30 does not exist in 2026-02/],
    ['2025-02-29T00:00:00Z', /day 29 does not exist in 2025-02/],
    ['1900-02-29T00:00:00Z', /day 29 does not exist in 1900-02/],
    ['2026-04-31T00:00:00Z', /day 31 does not exist/],
    ['2026-03-00T00:00:00Z', /day 00 does not exist/],
    ['2026-13-01T00:00:00Z', /month 13 does not exist/],
    ['2026-00-01T00:00:00Z', /month 00 does not exist/],
    ['2026-03-01T24:00:00Z', /hour 24 is out of range/],
    ['2026-03-01T23:60:00Z', /minute 60 is out of range/],
    ['2026-12-31T23:59:60Z', /second 60 is out of range .*leap seconds/],
    ['2026-03-01T09:30:00+24:00', /offset \+24:00 is out of range/],
    ['2026-03-01T09:30:00+01:60', /offset \+01:60 is out of range/],
    [`2026-03-01T09:30:00.${'1'.repeat(100)}Z`, /must be an RFC 3339 timestamp/],
  ])('rejects %s', (text, message) => {
    const error = rejection(() => parseRunAt(text));
    expect(error.field).toBe('runAt');
    expect(error.message).toMatch(/^runAt /);
    expect(error.message).toMatch(message);
  });

  it.each([[undefined], [null], [1_772_357_400_000], [new Date('2026-03-01T09:30:00Z')], [{}], [['2026-03-01T09:30:00Z']]])(
    'rejects the non-string %p',
    (value) => {
      const error = rejection(() => parseRunAt(value));
      expect(error.field).toBe('runAt');
      expect(error.message).toMatch(/^runAt must be an RFC 3339 timestamp with an offset, such as "2026-03-01T09:30:00Z"; got /);
    },
  );

  it('quotes long input shortened', () => {
    const error = rejection(() => parseRunAt('x'.repeat(10_000)));
    expect(error.message.length).toBeLessThan(200);
  });

  it('uses the field name it is given', () => {
    expect(rejection(() => parseRunAt('soon', 'startAt')).field).toBe('startAt');
  });
});

describe('parseRunAt quoting odd inputs', () => {
  it('says what was sent without a bare NaN (a fast-check counterexample)', () => {
    expect(() => parseRunAt(Number.NaN)).toThrow(/got a number that is not a number$/);
    expect(() => parseRunAt(Number.POSITIVE_INFINITY)).toThrow(/got number Infinity$/);
  });
});
