import { parseCron } from './cron-schedule';
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

describe('parseCron: accepted', () => {
  it('returns the normalised expression and UTC by default', () => {
    expect(parseCron('  0   9 *\t* 1-5 ')).toEqual({ expression: '0 9 * * 1-5', timezone: 'UTC' });
  });

  it('keeps the zone, canonically spelt', () => {
    expect(parseCron('0 9 * * *', 'europe/berlin')).toEqual({ expression: '0 9 * * *', timezone: 'Europe/Berlin' });
  });

  it.each([
    '* * * * *',
    '*/15 * * * *',
    '0 0 1 1 *',
    '0 0 29 2 *',
    '0 12 L * *',
    '0 12 * * 5L',
    '0 12 * * 1#2',
    '0 12 ? * mon-fri',
    '0 12 1 JAN,jul *',
    '0 0 31 2 1',
    '0 0 * 2 1#5',
    '* * * * * *',
    '*/10 * * * * *',
    '30 0 9 * * 1-5',
    '0 0 0 * * 7',
    '5/15 * * * *',
  ])('accepts %s', (expression) => {
    expect(parseCron(expression).expression).toBe(expression);
  });
});

describe('parseCron: rejected', () => {
  it.each([[42], [null], [undefined], [{}], [['* * * * *']]])('rejects the non-string %p', (value) => {
    const error = rejection(() => parseCron(value));
    expect(error.field).toBe('schedule');
    expect(error.message).toMatch(/^schedule must be a cron expression string; got /);
  });

  it.each(['', '   ', '\n\t'])('rejects the empty %p', (value) => {
    const error = rejection(() => parseCron(value));
    expect(error.field).toBe('schedule');
    expect(error.message).toBe('schedule must not be empty');
  });

  it.each([
    ['*', 1],
    ['* * *', 3],
    ['* * * *', 4],
    ['* * * * * * *', 7],
    ['@daily', 1],
    ['@hourly', 1],
  ])('rejects %p for its field count', (value, count) => {
    const error = rejection(() => parseCron(value));
    expect(error.field).toBe('schedule');
    expect(error.message).toBe(
      `schedule must have 5 fields (minute hour day-of-month month day-of-week) or 6 (with seconds first); ${JSON.stringify(value)} has ${count}`,
    );
  });

  it('rejects an expression over 256 characters', () => {
    const long = `0 0 ${Array.from({ length: 120 }, (_, index) => (index % 28) + 1).join(',')} * *`;
    expect(long.length).toBeGreaterThan(256);
    const error = rejection(() => parseCron(long));
    expect(error.field).toBe('schedule');
    expect(error.message).toBe(`schedule is too long: ${long.length} characters, at most 256`);
  });

  it.each([
    ['60 * * * *', 'minute', '60', /got value 60 expected range 0-59/],
    ['* 24 * * *', 'hour', '24', /got value 24 expected range 0-23/],
    ['* * 32 * *', 'day-of-month', '32', /expected range 1-31/],
    ['* * 0 * *', 'day-of-month', '0', /expected range 1-31/],
    ['* * * 13 *', 'month', '13', /expected range 1-12/],
    ['* * * * 8', 'day-of-week', '8', /expected range 0-7/],
    ['*/0 * * * *', 'minute', '*/0', /cannot repeat at every 0/],
    ['5-1 * * * *', 'minute', '5-1', /Invalid range/],
    ['* * * * 1#6', 'day-of-week', '1#6', /occurrence number/],
    ['* * * xyz *', 'month', 'xyz', /cannot resolve alias "xyz"/],
    ['61 * * * * *', 'second', '61', /expected range 0-59/],
  ])('rejects %p naming the %s field', (expression, fieldName, fieldText, detail) => {
    const error = rejection(() => parseCron(expression));
    expect(error.field).toBe('schedule');
    expect(error.message).toMatch(new RegExp(`^schedule: the ${fieldName} field "${fieldText.replace(/[*]/g, '\\*')}" is invalid \\(`));
    expect(error.message).toMatch(detail);
    expect(error.cause).toBeInstanceOf(Error);
  });

  it.each([
    ['x * * * *', 'minute'],
    ['-1 * * * *', 'minute'],
    ['1.5 * * * *', 'minute'],
    ['1-2-3 * * * *', 'minute'],
    ['1,,2 * * * *', 'minute'],
    ['*/ * * * *', 'minute'],
    ['* * * foo1 *', 'month'],
    ['* * * janu *', 'month'],
    ['* * * * MON%', 'day-of-week'],
    ['* * * * 1-3#2', 'day-of-week'],
    ['* * * * 5#1/2', 'day-of-week'],
    ['* * * * l', 'day-of-week'],
    ['0 0 L * L', 'day-of-week'],
    ['* * L-2 * *', 'day-of-month'],
    ['* * L/2 * *', 'day-of-month'],
    ['* * 15W * *', 'day-of-month'],
    ['* * * * * ;', 'day-of-week'],
    ['* L * * *', 'hour'],
    ['１ * * * *', 'minute'],
  ])('rejects the syntax of %p', (expression, fieldName) => {
    const error = rejection(() => parseCron(expression));
    expect(error.field).toBe('schedule');
    expect(error.message).toMatch(new RegExp(`^schedule: the ${fieldName} field ".*" is not valid cron syntax$`));
  });

  it.each(['H * * * *', '0 H * * *', 'H(0-29)/10 * * * *', '0 0 * * H', '0 0 * H *'])('rejects hashed values in %p', (expression) => {
    const error = rejection(() => parseCron(expression));
    expect(error.field).toBe('schedule');
    expect(error.message).toMatch(/hashed "H" values are not supported/);
  });

  it.each(['0 0 30 2 *', '0 0 31 4,6,9,11 *', '0 0 30,31 feb *'])('rejects %p, which never fires', (expression) => {
    const error = rejection(() => parseCron(expression));
    expect(error.field).toBe('schedule');
    expect(error.message).toMatch(/^schedule: ".*" never fires/);
  });

  it('names the timezone field for a bad zone', () => {
    const error = rejection(() => parseCron('0 9 * * *', 'Mars/Olympus_Mons'));
    expect(error.field).toBe('timezone');
    expect(error.message).toBe('timezone "Mars/Olympus_Mons" is not a known IANA time zone');
  });

  it('uses the field names it is given', () => {
    expect(rejection(() => parseCron('nope', 'UTC', { schedule: 'cron' })).field).toBe('cron');
    expect(rejection(() => parseCron('0 9 * * *', 'Nowhere/Land', { timezone: 'zone' })).field).toBe('zone');
    expect(rejection(() => parseCron('* * *', undefined, { schedule: 'cron' })).message).toMatch(/^cron must have 5 fields/);
  });

  it('checks the expression before the zone', () => {
    expect(rejection(() => parseCron('* * *', 'Nowhere/Land')).field).toBe('schedule');
  });
});
