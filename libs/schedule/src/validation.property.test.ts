/**
 * Property: the validators either return or throw ScheduleValidationError,
 * whatever they are given; never a TypeError, RangeError or cron-parser's own
 * error. Anything parseCron accepts can be computed with.
 */
import fc from 'fast-check';
import { parseCron } from './cron-schedule';
import { parseMisfirePolicy } from './misfire-policy';
import { nextOccurrence } from './occurrences';
import { parseRunAt } from './run-at';
import { ScheduleValidationError } from './schedule-validation-error';
import { validateTimezone } from './timezone';

/** Runs `validate`; a ScheduleValidationError with a readable message is an allowed outcome. */
function returnsOrRejects(validate: () => unknown, field: string): unknown {
  try {
    return validate();
  } catch (error: unknown) {
    if (!(error instanceof ScheduleValidationError)) throw error;
    expect(error.field).toBe(field);
    expect(error.message.startsWith(field)).toBe(true);
    expect(error.message).not.toMatch(/\[object |got undefined|NaN/);
    return undefined;
  }
}

const FRAGMENTS = [
  '*', '?', '0', '1', '5', '7', '12', '23', '24', '29', '30', '31', '32', '59', '60', '99999999999',
  '1-5', '5-1', '0-23', '*/0', '*/7', '*/15', '5/15', '1-30/7', '1,2,3', '1,,2', 'L', '5L', 'L-2', 'LW', '15W',
  '1#5', '1#6', '3#0', '#', 'jan', 'FEB', 'dec-jan', 'mon', 'sun-sat', 'MON-FRI', 'H', 'H/5', 'H(1-5)', 'x', '',
  '-', '/', ',', '1-2-3', '-1', '1.5', '１', '??', '**', '*/', '/5', '0x1F', '1e1', '@daily', 'é',
];
const cronField = fc
  .array(fc.oneof(fc.constantFrom(...FRAGMENTS), fc.string({ maxLength: 4 })), { minLength: 1, maxLength: 3 })
  .map((parts) => parts.join(','));
const cronLike = fc
  .tuple(fc.array(cronField, { minLength: 3, maxLength: 7 }), fc.constantFrom(' ', '  ', '\t', ' \n '), fc.boolean())
  .map(([fields, separator, padded]) => (padded ? ` ${fields.join(separator)} ` : fields.join(separator)));
const rfc3339Like = fc
  .tuple(
    fc.integer({ min: 0, max: 10_000 }),
    fc.integer({ min: 0, max: 13 }),
    fc.integer({ min: 0, max: 32 }),
    fc.integer({ min: 0, max: 25 }),
    fc.integer({ min: 0, max: 61 }),
    fc.integer({ min: 0, max: 61 }),
    fc.constantFrom('', '.5', '.123456', '.'),
    fc.constantFrom('Z', 'z', '+01:00', '-12:30', '+24:00', '+1:00', '', ' Z'),
  )
  .map(([year, month, day, hour, minute, second, fraction, zone]) => {
    const two = (n: number): string => String(n).padStart(2, '0');
    return `${String(year).padStart(4, '0')}-${two(month)}-${two(day)}T${two(hour)}:${two(minute)}:${two(second)}${fraction}${zone}`;
  });
const zoneLike = fc.oneof(
  fc.constantFrom('UTC', 'utc', 'Europe/Berlin', 'europe/BERLIN', 'America/New_York', 'Etc/GMT+5', 'Mars/Base', '+02:00', 'Z', 'EST', ''),
  fc.string({ maxLength: 30 }),
);
const anyInput = fc.oneof(
  fc.anything(),
  fc.string(),
  fc.string({ unit: 'binary' }),
  cronLike,
  rfc3339Like,
  zoneLike,
  fc.constantFrom('fire-once', 'skip'),
);

describe('validators, given anything', () => {
  it('return or throw ScheduleValidationError only', () => {
    fc.assert(
      fc.property(anyInput, anyInput, (first, second) => {
        returnsOrRejects(() => parseRunAt(first), 'runAt');
        returnsOrRejects(() => validateTimezone(first), 'timezone');
        returnsOrRejects(() => parseMisfirePolicy(first), 'misfirePolicy');
        try {
          parseCron(first, second);
        } catch (error: unknown) {
          if (!(error instanceof ScheduleValidationError)) throw error;
          expect(['schedule', 'timezone']).toContain(error.field);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('parseCron on cron-like strings: rejects readably, or accepts something computable and stable', () => {
    const after = new Date('2026-05-04T10:07:00Z');
    fc.assert(
      fc.property(cronLike, (text) => {
        const schedule = returnsOrRejects(() => parseCron(text), 'schedule') as ReturnType<typeof parseCron> | undefined;
        if (schedule === undefined) return;
        expect(parseCron(schedule.expression)).toEqual(schedule);
        const next = nextOccurrence(schedule, after);
        expect(next).not.toBeNull();
        expect(next!.getTime()).toBeGreaterThan(after.getTime());
      }),
      { numRuns: 2000 },
    );
  });

  it('parseRunAt on RFC 3339-like strings: accepts exactly the real instants', () => {
    fc.assert(
      fc.property(rfc3339Like, (text) => {
        const parsed = returnsOrRejects(() => parseRunAt(text), 'runAt');
        if (parsed instanceof Date) {
          expect(Number.isNaN(parsed.getTime())).toBe(false);
          if (/Z$/i.test(text) && !text.includes('.')) expect(parsed.toISOString().slice(0, 19)).toBe(text.slice(0, 19).replace('t', 'T'));
        }
      }),
      { numRuns: 2000 },
    );
  });
});
