/**
 * The UTC offset a time zone has at an instant, read from the runtime's Intl
 * database (the same database validateTimezone checks against). Offsets are
 * whole seconds, as in the tz database (old local-mean-time offsets have
 * seconds, e.g. Berlin before 1893 was +00:53:28).
 *
 * Formatters are cached per zone: building one costs far more than using it.
 * The cache holds one entry per zone name ever used, a small bounded set.
 */
import { wallClockMs } from './wall-clock-ms';

const MS_PER_SECOND = 1000;
const formatterByZone = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timezone: string): Intl.DateTimeFormat {
  let formatter = formatterByZone.get(timezone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: timezone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatterByZone.set(timezone, formatter);
  }
  return formatter;
}

/** Offset of `timezone` at `instantMs`, in ms (east of UTC positive). */
export function zoneOffsetMs(timezone: string, instantMs: number): number {
  if (timezone === 'UTC') return 0;
  const reading = { year: 0, month: 1, day: 1, hour: 0, minute: 0, second: 0, millisecond: 0 };
  let isBeforeCommonEra = false;
  for (const part of formatterFor(timezone).formatToParts(new Date(instantMs))) {
    switch (part.type) {
      case 'era':
        isBeforeCommonEra = part.value.startsWith('B');
        break;
      case 'year':
      case 'month':
      case 'day':
      case 'hour':
      case 'minute':
      case 'second':
        reading[part.type] = Number(part.value);
        break;
      default:
        break;
    }
  }
  // Intl counts years before 1 CE as 1 BC, 2 BC, ...; astronomically 0, -1, ...
  if (isBeforeCommonEra) reading.year = 1 - reading.year;
  const wholeSecondMs = instantMs - (((instantMs % MS_PER_SECOND) + MS_PER_SECOND) % MS_PER_SECOND);
  return wallClockMs(reading) - wholeSecondMs;
}
