/**
 * The public occurrence queries. The occurrence set itself (and the DST policy)
 * is defined in occurrence-spans.ts; the searching in occurrence-search.ts.
 * `now` and `after` are always arguments: nothing here reads a clock.
 */
import type { CronSchedule } from './cron-schedule';
import { MAX_INSTANT_MS, instantMs } from './instant-range';
import { occurrenceAtOrAfter } from './occurrence-search';
import { zonedCron } from './zoned-cron';

/**
 * How far ahead a search looks: a century, beyond the longest gap between
 * occurrences of any expression that fires at all (about 40 years).
 */
export const SEARCH_HORIZON_MS = 100 * 365.25 * 86_400_000;

/** Exclusive end of a forward search starting at `fromMs`. */
export function searchEndMs(fromMs: number): number {
  return Math.min(fromMs + SEARCH_HORIZON_MS, MAX_INSTANT_MS + 1);
}

/** First occurrence at or after `now` (a job created exactly on an occurrence serves it). */
export function firstOccurrence(schedule: CronSchedule, now: Date): Date {
  const nowMs = instantMs(now, 'now');
  const firstMs = occurrenceAtOrAfter(zonedCron(schedule), nowMs, searchEndMs(nowMs));
  if (firstMs === null) {
    throw new RangeError(`schedule "${schedule.expression}" has no occurrence within the search horizon after ${now.toISOString()}`);
  }
  return new Date(firstMs);
}

/** Next occurrence strictly after `after`. Returns null only if none within the search horizon. */
export function nextOccurrence(schedule: CronSchedule, after: Date): Date | null {
  const afterMs = instantMs(after, 'after');
  const nextMs = occurrenceAtOrAfter(zonedCron(schedule), afterMs + 1, searchEndMs(afterMs + 1));
  return nextMs === null ? null : new Date(nextMs);
}
