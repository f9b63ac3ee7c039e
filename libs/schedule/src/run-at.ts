/**
 * Parsing a one-off job's `runAt`. RFC 3339 date-time only: a full date, a full
 * time with optional fraction, and an explicit offset ("Z" or "+hh:mm"). No
 * local times (they are ambiguous around DST), no date-only forms, no space
 * separator, no leap second (JavaScript time cannot hold it), no impossible
 * calendar dates (2026-02-30), which Date.parse would silently roll over.
 * Fractions finer than a millisecond are truncated.
 */
import { describeValue } from './describe-value';
import { ScheduleValidationError } from './schedule-validation-error';
import { wallClockMs } from './wall-clock-ms';

const MAX_RUN_AT_CHARS = 64;
const RFC_3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;
const MS_PER_MINUTE = 60_000;

function daysInMonth(year: number, month: number): number {
  const isLeap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const lengths = [31, isLeap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  return lengths[month - 1] ?? 0;
}

/** Validates an RFC 3339 timestamp with an offset and returns the instant it names. */
const EARLIEST_RUN_AT_MS = 0;
const LATEST_RUN_AT_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

export function parseRunAt(value: unknown, field = 'runAt'): Date {
  const expected = `${field} must be an RFC 3339 timestamp with an offset, such as "2026-03-01T09:30:00Z"`;
  if (typeof value !== 'string') throw new ScheduleValidationError(field, `${expected}; got ${describeValue(value)}`);
  const match = value.length <= MAX_RUN_AT_CHARS ? RFC_3339.exec(value) : null;
  if (match === null) throw new ScheduleValidationError(field, `${expected}; got ${describeValue(value)}`);

  const [, yearText, monthText, dayText, hourText, minuteText, secondText, fraction, zulu, sign, offsetHourText, offsetMinuteText] = match;
  const year = Number(yearText);
  const month = Number(monthText);
  const day = Number(dayText);
  const hour = Number(hourText);
  const minute = Number(minuteText);
  const second = Number(secondText);
  const fail = (problem: string): never => {
    throw new ScheduleValidationError(field, `${field} ${describeValue(value)} is not a valid timestamp: ${problem}`);
  };
  if (month < 1 || month > 12) fail(`month ${monthText} does not exist`);
  if (day < 1 || day > daysInMonth(year, month)) fail(`day ${dayText} does not exist in ${yearText}-${monthText}`);
  if (hour > 23) fail(`hour ${hourText} is out of range 00-23`);
  if (minute > 59) fail(`minute ${minuteText} is out of range 00-59`);
  if (second > 59) fail(`second ${secondText} is out of range 00-59 (leap seconds are not supported)`);

  let offsetMs = 0;
  if (zulu === undefined) {
    const offsetHours = Number(offsetHourText);
    const offsetMinutes = Number(offsetMinuteText);
    if (offsetHours > 23 || offsetMinutes > 59) fail(`offset ${sign}${offsetHourText}:${offsetMinuteText} is out of range`);
    offsetMs = (sign === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * MS_PER_MINUTE;
  }
  const millisecond = fraction === undefined ? 0 : Number(fraction.slice(0, 3).padEnd(3, '0'));
  const instant = wallClockMs({ year, month, day, hour, minute, second, millisecond }) - offsetMs;
  // Before 1970 has no use (a past runAt runs now) and years below 100 or past 9999 do not survive
  // every round trip (JavaScript's two-digit years, RFC 3339's four-digit ones).
  if (!(instant >= EARLIEST_RUN_AT_MS && instant <= LATEST_RUN_AT_MS)) {
    fail('it must lie between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59Z');
  }
  return new Date(instant);
}
