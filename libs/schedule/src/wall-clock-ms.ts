/**
 * A calendar reading (year, month, day, time) as a number: the milliseconds it
 * would be if the reading were UTC. The package calls this "wall-clock ms"; it
 * is how a local time is carried without a zone (occurrence-spans.ts explains
 * how zones map it to instants). Works for years 0-99 too, which Date.UTC
 * would shift into the 1900s.
 */
export interface CalendarReading {
  year: number;
  /** 1-12 */
  month: number;
  /** 1-31 */
  day: number;
  hour: number;
  minute: number;
  second: number;
  millisecond: number;
}

export function wallClockMs(reading: CalendarReading): number {
  const date = new Date(0);
  date.setUTCFullYear(reading.year, reading.month - 1, reading.day);
  date.setUTCHours(reading.hour, reading.minute, reading.second, reading.millisecond);
  return date.getTime();
}
