/**
 * Cron matching on wall-clock ms (see wall-clock-ms.ts): readings with no zone.
 * cron-parser, run in UTC, does the calendar work; UTC has no DST, so its
 * answers are exact there and do not depend on where a search started. Zones
 * and DST are applied on top of this, in occurrence-spans.ts.
 *
 * All occurrences are whole seconds. Bounds are inclusive unless named `until`.
 */
import type { CronExpression } from 'cron-parser';

export interface WallClockCron {
  /** The hour field allows all 24 hours: on any day it fires, it fires at least hourly. */
  readonly everyHour: boolean;
  /** First matching reading >= wallMs, or null if cron-parser's search budget (10 000 steps: centuries of calendar) runs out. */
  nextAtOrAfter(wallMs: number): number | null;
  /** Last matching reading <= wallMs, or null if cron-parser finds none. */
  prevAtOrBefore(wallMs: number): number | null;
  matches(wallMs: number): boolean;
  /** Matching readings in [fromWallMs, untilWallMs), counted up to `limit` (the result never exceeds it). */
  countBetween(fromWallMs: number, untilWallMs: number, limit: number): number;
  /** Calls `visit` with each matching reading in [fromWallMs, untilWallMs), in order, until it returns false. */
  forEachBetween(fromWallMs: number, untilWallMs: number, visit: (wallMs: number) => boolean): void;
}

const MS_PER_SECOND = 1000;
const MS_PER_DAY = 86_400_000;
const SECONDS_PER_HOUR = 3600;
const HOURS_PER_DAY = 24;

/** cron-parser's way of saying "searched its loop budget and found nothing". */
function isSearchExhausted(error: unknown): boolean {
  return error instanceof Error && /loop limit/i.test(error.message);
}

function numericValues(values: readonly (number | string)[]): number[] {
  return values.map(Number).sort((a, b) => a - b);
}

/**
 * Counts (hour, minute, second) combinations of the fields whose second of the
 * day is < `secondOfDay`. Cost is linear in the field sizes, not in the count.
 */
function countTimesOfDayBefore(hours: number[], minutes: number[], seconds: number[], secondOfDay: number): number {
  let count = 0;
  for (const hour of hours) {
    const hourStart = hour * SECONDS_PER_HOUR;
    if (hourStart >= secondOfDay) break;
    if (hourStart + SECONDS_PER_HOUR <= secondOfDay) {
      count += minutes.length * seconds.length;
      continue;
    }
    for (const minute of minutes) {
      const minuteStart = hourStart + minute * 60;
      if (minuteStart >= secondOfDay) break;
      for (const second of seconds) {
        if (minuteStart + second >= secondOfDay) break;
        count += 1;
      }
    }
  }
  return count;
}

/** Wraps a cron-parser expression parsed with tz 'UTC'. */
export function wallClockCron(expression: CronExpression): WallClockCron {
  const hours = numericValues(expression.fields.hour.values);
  const minutes = numericValues(expression.fields.minute.values);
  const seconds = numericValues(expression.fields.second.values);

  const nextAtOrAfter = (wallMs: number): number | null => {
    // next() is strictly after its start once the start is rounded up to a whole
    // second; starting 1 ms early makes a match at exactly wallMs count.
    expression.reset(new Date(wallMs - 1));
    try {
      return expression.next().getTime();
    } catch (error: unknown) {
      if (isSearchExhausted(error)) return null;
      throw error;
    }
  };

  const prevAtOrBefore = (wallMs: number): number | null => {
    // prev() is strictly before its start after dropping milliseconds; starting
    // 1 ms late makes a match at exactly wallMs count.
    expression.reset(new Date(wallMs + 1));
    try {
      return expression.prev().getTime();
    } catch (error: unknown) {
      if (isSearchExhausted(error)) return null;
      throw error;
    }
  };

  const hourSet = new Set(hours);
  const minuteSet = new Set(minutes);
  const secondSet = new Set(seconds);
  const firstTimeOfDayMs = ((hours[0] ?? 0) * SECONDS_PER_HOUR + (minutes[0] ?? 0) * 60 + (seconds[0] ?? 0)) * MS_PER_SECOND;
  // Day matching (month, day-of-month, day-of-week, L, #) is cron-parser's; it is
  // asked once per day, since callers test many readings of the same day.
  let lastDayStartMs = Number.NaN;
  let lastDayMatches = false;
  const matches = (wallMs: number): boolean => {
    if (wallMs % MS_PER_SECOND !== 0) return false;
    const dayStartMs = Math.floor(wallMs / MS_PER_DAY) * MS_PER_DAY;
    const secondOfDay = (wallMs - dayStartMs) / MS_PER_SECOND;
    const hour = Math.floor(secondOfDay / SECONDS_PER_HOUR);
    const minute = Math.floor((secondOfDay % SECONDS_PER_HOUR) / 60);
    if (!hourSet.has(hour) || !minuteSet.has(minute) || !secondSet.has(secondOfDay % 60)) return false;
    if (dayStartMs !== lastDayStartMs) {
      lastDayStartMs = dayStartMs;
      lastDayMatches = expression.includesDate(new Date(dayStartMs + firstTimeOfDayMs));
    }
    return lastDayMatches;
  };

  const countBetween = (fromWallMs: number, untilWallMs: number, limit: number): number => {
    let count = 0;
    let cursorMs = fromWallMs;
    // One cron-parser search per matching day; the day's matches are counted
    // from the field values, so an every-second schedule costs O(days).
    while (count < limit && cursorMs < untilWallMs) {
      const firstMs = nextAtOrAfter(cursorMs);
      if (firstMs === null || firstMs >= untilWallMs) break;
      const dayStartMs = Math.floor(firstMs / MS_PER_DAY) * MS_PER_DAY;
      const dayEndMs = dayStartMs + MS_PER_DAY;
      const fromSecond = (firstMs - dayStartMs) / MS_PER_SECOND;
      const untilSecond = Math.ceil((Math.min(untilWallMs, dayEndMs) - dayStartMs) / MS_PER_SECOND);
      count += countTimesOfDayBefore(hours, minutes, seconds, untilSecond) - countTimesOfDayBefore(hours, minutes, seconds, fromSecond);
      cursorMs = dayEndMs;
    }
    return Math.min(count, limit);
  };

  const forEachBetween = (fromWallMs: number, untilWallMs: number, visit: (wallMs: number) => boolean): void => {
    let cursorMs = fromWallMs;
    // One cron-parser search per matching day; within the day, readings come
    // straight from the field values.
    while (cursorMs < untilWallMs) {
      const firstMs = nextAtOrAfter(cursorMs);
      if (firstMs === null || firstMs >= untilWallMs) return;
      const dayStartMs = Math.floor(firstMs / MS_PER_DAY) * MS_PER_DAY;
      for (const hour of hours) {
        const hourStartMs = dayStartMs + hour * SECONDS_PER_HOUR * MS_PER_SECOND;
        if (hourStartMs + SECONDS_PER_HOUR * MS_PER_SECOND <= firstMs) continue;
        for (const minute of minutes) {
          const minuteStartMs = hourStartMs + minute * 60 * MS_PER_SECOND;
          if (minuteStartMs + 60 * MS_PER_SECOND <= firstMs) continue;
          for (const second of seconds) {
            const readingMs = minuteStartMs + second * MS_PER_SECOND;
            if (readingMs < firstMs) continue;
            if (readingMs >= untilWallMs || !visit(readingMs)) return;
          }
        }
      }
      cursorMs = dayStartMs + MS_PER_DAY;
    }
  };

  return {
    everyHour: hours.length === HOURS_PER_DAY,
    nextAtOrAfter,
    prevAtOrBefore,
    matches,
    countBetween,
    forEachBetween,
  };
}
