/**
 * Previewing a schedule: its next occurrences as instants and local readings,
 * each marked when the DST policy (occurrence-spans.ts) moved or repeated it,
 * so a user can check a cron expression before trusting it.
 *
 * The marks, for an occurrence t of a zoned schedule:
 *
 * - `gap-shifted`: the written reading falls in a spring-forward gap and fires
 *   shifted later by the gap's length ('30 2 * * *' in Berlin on the spring
 *   day fires at 03:30 local). `scheduledLocal` says what was written.
 * - `repeated-first`: the reading occurs twice (fall back) and this is its
 *   first instant, the one a schedule fires at.
 * - `repeated-elapsed`: the second pass of a repeated hour, which only a
 *   schedule allowing every hour fires at, so that it keeps firing every hour
 *   of real time.
 */
import type { CronSchedule } from './cron-schedule';
import { MAX_INSTANT_MS, instantMs } from './instant-range';
import { occurrenceAtOrAfter } from './occurrence-search';
import { searchEndMs } from './occurrences';
import { MAX_OFFSET_CHANGE_MS } from './occurrence-spans';
import { zoneOffsetMs } from './zone-offset';
import { zoneTransitionsBetween } from './zone-transitions';
import { zonedCron } from './zoned-cron';

export type DstMark = 'gap-shifted' | 'repeated-first' | 'repeated-elapsed';

export interface PreviewedOccurrence {
  /** The instant it fires. */
  at: Date;
  /** Its local reading in the schedule's zone, `YYYY-MM-DDTHH:mm:ss`. */
  local: string;
  /** The zone's UTC offset at that instant, `+02:00`. */
  offset: string;
  /** Set when DST moved or repeated the reading; null for a plain occurrence. */
  dst: DstMark | null;
  /** `gap-shifted` only: the reading the expression asked for, which did not exist that day. */
  scheduledLocal: string | null;
}

/** Most occurrences one preview lists. */
export const MAX_PREVIEW_COUNT = 1000;

/**
 * The first `count` occurrences at or after `from` (up to MAX_PREVIEW_COUNT;
 * fewer if the search horizon ends first).
 */
export function previewOccurrences(schedule: CronSchedule, from: Date, count: number): PreviewedOccurrence[] {
  const fromMs = instantMs(from, 'from');
  const limit = Math.max(0, Math.min(MAX_PREVIEW_COUNT, Math.floor(count)));
  const zoned = zonedCron(schedule);
  const result: PreviewedOccurrence[] = [];
  let cursorMs = fromMs;
  while (result.length < limit && cursorMs <= MAX_INSTANT_MS) {
    const atMs = occurrenceAtOrAfter(zoned, cursorMs, searchEndMs(cursorMs));
    if (atMs === null) break;
    result.push(describeOccurrence(zoned.cron.matches.bind(zoned.cron), schedule.timezone, atMs));
    cursorMs = atMs + 1;
  }
  return result;
}

/** Marks one occurrence: which DST case, if any, produced it. */
function describeOccurrence(matches: (wallMs: number) => boolean, timezone: string, atMs: number): PreviewedOccurrence {
  const offsetMs = zoneOffsetMs(timezone, atMs);
  const base = { at: new Date(atMs), local: reading(atMs + offsetMs), offset: offsetText(offsetMs) };
  for (const transition of zoneTransitionsBetween(timezone, atMs - MAX_OFFSET_CHANGE_MS, atMs + MAX_OFFSET_CHANGE_MS)) {
    const changeMs = transition.offsetAfterMs - transition.offsetBeforeMs;
    if (changeMs > 0 && atMs >= transition.atMs && atMs < transition.atMs + changeMs && !matches(atMs + offsetMs)) {
      // Read with the old offset, the instant is a reading the gap swallowed.
      return { ...base, dst: 'gap-shifted', scheduledLocal: reading(atMs + transition.offsetBeforeMs) };
    }
    if (changeMs < 0 && atMs >= transition.atMs + changeMs && atMs < transition.atMs) {
      return { ...base, dst: 'repeated-first', scheduledLocal: null };
    }
    if (changeMs < 0 && atMs >= transition.atMs && atMs < transition.atMs - changeMs) {
      return { ...base, dst: 'repeated-elapsed', scheduledLocal: null };
    }
  }
  return { ...base, dst: null, scheduledLocal: null };
}

function reading(wallMs: number): string {
  return new Date(wallMs).toISOString().slice(0, 19);
}

function offsetText(offsetMs: number): string {
  const sign = offsetMs < 0 ? '-' : '+';
  const minutes = Math.abs(Math.round(offsetMs / 60_000));
  return `${sign}${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;
}
