/**
 * What a recurring job serves next once an occurrence is done (succeeded, or
 * failed for good), and which occurrences it skipped.
 *
 * Next is computed from the occurrence just served, never from the finish
 * time: a run that starts late or runs long must not shift the schedule, and
 * anything that fell between the served occurrence and `now` is "missed",
 * handled by the misfire policy and reported, never silently dropped.
 *
 * Missed = occurrences in (served, now], `now` being database time.
 * - None missed: next = the first occurrence after `served` (it is after now).
 * - 'fire-once': next = the latest missed occurrence; it is <= now, so it is
 *   due at once (late). The earlier missed ones are skipped.
 * - 'skip': next = the first occurrence after now; all missed are skipped.
 *
 * Cost does not grow with downtime: next and the latest missed occurrence are
 * found by direct search, the count is computed per matching day from the
 * cron fields and stops at `countLimit`, and only `maxListed` instants are
 * materialised. An every-second schedule after a day down is a handful of
 * cron-parser calls.
 */
import type { CronSchedule } from './cron-schedule';
import { instantMs } from './instant-range';
import type { MisfirePolicy } from './misfire-policy';
import { occurrenceAtOrAfter, occurrenceAtOrBefore, scanOccurrences, type ZonedCron } from './occurrence-search';
import { searchEndMs } from './occurrences';
import { zonedCron } from './zoned-cron';

export interface OccurrencePlan {
  /** The occurrence to serve next (<= now when it is a late fire-once). */
  next: Date;
  /** The earliest skipped occurrences, in order, at most `maxListed`. */
  skipped: Date[];
  /** Exact number skipped, or `countLimit` when there are more (then `truncated`). */
  skippedCount: number;
  truncated: boolean;
}

const DEFAULT_MAX_LISTED = 100;
const DEFAULT_COUNT_LIMIT = 100_000;

function requireCount(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be an integer >= 0, got ${value}`);
  return value;
}

function firstAfter(zoned: ZonedCron, schedule: CronSchedule, afterMs: number): number {
  const nextMs = occurrenceAtOrAfter(zoned, afterMs + 1, searchEndMs(afterMs + 1));
  if (nextMs === null) {
    throw new RangeError(`schedule "${schedule.expression}" has no occurrence within the search horizon after ${new Date(afterMs).toISOString()}`);
  }
  return nextMs;
}

/** Plans the next occurrence after `served` finished (or was given up) at database time `now`. */
export function planAfterOccurrence(
  schedule: CronSchedule,
  served: Date,
  now: Date,
  policy: MisfirePolicy,
  limits: { maxListed?: number; countLimit?: number } = {},
): OccurrencePlan {
  const maxListed = requireCount('maxListed', limits.maxListed ?? DEFAULT_MAX_LISTED);
  const countLimit = requireCount('countLimit', limits.countLimit ?? DEFAULT_COUNT_LIMIT);
  const servedMs = instantMs(served, 'served');
  const nowMs = instantMs(now, 'now');
  const zoned = zonedCron(schedule);

  const firstMissedMs = nowMs > servedMs ? occurrenceAtOrAfter(zoned, servedMs + 1, nowMs + 1) : null;
  if (firstMissedMs === null) {
    return { next: new Date(firstAfter(zoned, schedule, servedMs)), skipped: [], skippedCount: 0, truncated: false };
  }

  let nextMs: number;
  let skippedUntilMs: number;
  if (policy === 'fire-once') {
    // Non-null: firstMissedMs is in (served, now].
    nextMs = occurrenceAtOrBefore(zoned, nowMs, servedMs + 1) ?? firstMissedMs;
    skippedUntilMs = nextMs;
  } else {
    nextMs = firstAfter(zoned, schedule, nowMs);
    skippedUntilMs = nowMs + 1;
  }
  // One past the limit tells "exactly countLimit" from "more than countLimit";
  // the list never runs ahead of the count.
  const scan = scanOccurrences(zoned, servedMs + 1, skippedUntilMs, Math.min(maxListed, countLimit), countLimit + 1);
  return {
    next: new Date(nextMs),
    skipped: scan.earliestMs.map((ms) => new Date(ms)),
    skippedCount: Math.min(scan.count, countLimit),
    truncated: scan.count > countLimit,
  };
}
