/**
 * Searching a zoned schedule's occurrences (as defined in occurrence-spans.ts)
 * forwards and backwards, and scanning a range of them (the earliest few plus a
 * count). Work is done in windows of WINDOW_MS, each resolved into spans.
 *
 * Sparse schedules (yearly, or a 5th Monday in February) would mean many empty
 * windows, so each window starts with a jump: the nearest matching wall-clock
 * reading bounds where the nearest occurrence can be. A reading and its instant
 * differ by the offset (at most MAX_OFFSET_MS), and the reading at an instant
 * differs from "instant + offset now" by at most WALL_DRIFT_MS (offset changes
 * in between), so no occurrence is ever jumped over.
 */
import { occurrenceSpans, type OccurrenceSpan } from './occurrence-spans';
import type { WallClockCron } from './wall-clock-cron';
import { zoneOffsetMs } from './zone-offset';

const MS_PER_DAY = 86_400_000;
/** Small, because each window samples the zone's offset twice a day (zone-transitions.ts). */
const WINDOW_MS = 2 * MS_PER_DAY;
/** No zone's offset has ever reached a day (the extremes are about +-16 h). */
const MAX_OFFSET_MS = MS_PER_DAY;
const WALL_DRIFT_MS = 3 * MS_PER_DAY;

/** A schedule ready to search: its wall-clock matcher and its canonical zone. */
export interface ZonedCron {
  readonly cron: WallClockCron;
  readonly timezone: string;
}

function firstInSpan(cron: WallClockCron, span: OccurrenceSpan, loMs: number): number | null {
  const wallMs = cron.nextAtOrAfter(Math.max(loMs, span.fromMs) + span.offsetMs);
  if (wallMs === null) return null;
  const instantMs = wallMs - span.offsetMs;
  // A gap span's instant may also be a regular one; that is the same instant, so no harm.
  return instantMs < span.untilMs ? instantMs : null;
}

function lastInSpan(cron: WallClockCron, span: OccurrenceSpan, hiMs: number): number | null {
  const wallMs = cron.prevAtOrBefore(Math.min(hiMs, span.untilMs - 1) + span.offsetMs);
  if (wallMs === null) return null;
  const instantMs = wallMs - span.offsetMs;
  return instantMs >= span.fromMs ? instantMs : null;
}

/** First occurrence in [loMs, untilMs), or null. */
export function occurrenceAtOrAfter({ cron, timezone }: ZonedCron, loMs: number, untilMs: number): number | null {
  let cursorMs = loMs;
  for (let windowIndex = 0; cursorMs < untilMs; windowIndex++) {
    if (windowIndex > 0) {
      // The first window usually holds the answer; jump only after an empty one.
      const nearestWallMs = cron.nextAtOrAfter(cursorMs + zoneOffsetMs(timezone, cursorMs) - WALL_DRIFT_MS);
      if (nearestWallMs === null) return null;
      cursorMs = Math.max(cursorMs, nearestWallMs - MAX_OFFSET_MS);
      if (cursorMs >= untilMs) return null;
    }
    const windowEndMs = Math.min(untilMs, cursorMs + WINDOW_MS);
    let bestMs: number | null = null;
    for (const span of occurrenceSpans(cron, timezone, cursorMs, windowEndMs)) {
      const candidateMs = firstInSpan(cron, span, cursorMs);
      if (candidateMs !== null && (bestMs === null || candidateMs < bestMs)) bestMs = candidateMs;
    }
    if (bestMs !== null) return bestMs;
    cursorMs = windowEndMs;
  }
  return null;
}

/** Last occurrence in [sinceMs, hiMs], or null. */
export function occurrenceAtOrBefore({ cron, timezone }: ZonedCron, hiMs: number, sinceMs: number): number | null {
  let cursorMs = hiMs;
  for (let windowIndex = 0; cursorMs >= sinceMs; windowIndex++) {
    if (windowIndex > 0) {
      const nearestWallMs = cron.prevAtOrBefore(cursorMs + zoneOffsetMs(timezone, cursorMs) + WALL_DRIFT_MS);
      if (nearestWallMs === null) return null;
      cursorMs = Math.min(cursorMs, nearestWallMs + MAX_OFFSET_MS);
      if (cursorMs < sinceMs) return null;
    }
    const windowStartMs = Math.max(sinceMs, cursorMs - WINDOW_MS);
    let bestMs: number | null = null;
    for (const span of occurrenceSpans(cron, timezone, windowStartMs, cursorMs + 1)) {
      const candidateMs = lastInSpan(cron, span, cursorMs);
      if (candidateMs !== null && (bestMs === null || candidateMs > bestMs)) bestMs = candidateMs;
    }
    if (bestMs !== null) return bestMs;
    cursorMs = windowStartMs - 1;
  }
  return null;
}

/** Calls `visit` with each occurrence of one span, in order, until it returns false. */
function forEachInSpan(cron: WallClockCron, span: OccurrenceSpan, visit: (instantMs: number) => boolean): void {
  const { offsetMs, shadowOffsetMs } = span;
  cron.forEachBetween(span.fromMs + offsetMs, span.untilMs + offsetMs, (wallMs) => {
    const instantMs = wallMs - offsetMs;
    // A gap span leaves instants that are regular occurrences to the regular span.
    if (shadowOffsetMs !== null && cron.matches(instantMs + shadowOffsetMs)) return true;
    return visit(instantMs);
  });
}

/** Occurrences of one span in order, from its start, at most `max` of them. */
function listSpan(cron: WallClockCron, span: OccurrenceSpan, max: number): number[] {
  const listed: number[] = [];
  if (max > 0) forEachInSpan(cron, span, (instantMs) => listed.push(instantMs) < max);
  return listed;
}

/** How many occurrences one span holds, up to `limit`. */
function countSpan(cron: WallClockCron, span: OccurrenceSpan, limit: number): number {
  if (span.shadowOffsetMs === null) return cron.countBetween(span.fromMs + span.offsetMs, span.untilMs + span.offsetMs, limit);
  // Gap spans are at most a day long and usually an hour: count them one by one.
  let count = 0;
  if (limit > 0) forEachInSpan(cron, span, () => ++count < limit);
  return count;
}

export interface OccurrenceScan {
  /** The earliest occurrences in the range, in order, at most `maxListed`. */
  earliestMs: number[];
  /** Number of occurrences in the range, or `countLimit` if there are at least that many. */
  count: number;
}

/** The earliest `maxListed` occurrences in [fromMs, untilMs) and their count, saturating at `countLimit`. */
export function scanOccurrences(zoned: ZonedCron, fromMs: number, untilMs: number, maxListed: number, countLimit: number): OccurrenceScan {
  const { cron, timezone } = zoned;
  const earliestMs: number[] = [];
  let count = 0;
  let cursorMs = fromMs;
  while (cursorMs < untilMs && (count < countLimit || earliestMs.length < maxListed)) {
    const nextMs = occurrenceAtOrAfter(zoned, cursorMs, untilMs);
    if (nextMs === null) break;
    // Jump over the empty stretch, then take a whole window at once.
    cursorMs = nextMs;
    const windowEndMs = Math.min(untilMs, cursorMs + WINDOW_MS);
    const spans = occurrenceSpans(cron, timezone, cursorMs, windowEndMs);
    if (earliestMs.length < maxListed) {
      const wanted = maxListed - earliestMs.length;
      const listed = spans.flatMap((span) => listSpan(cron, span, wanted)).sort((a, b) => a - b);
      earliestMs.push(...listed.slice(0, wanted));
    }
    for (const span of spans) {
      if (count >= countLimit) break;
      count += countSpan(cron, span, countLimit - count);
    }
    cursorMs = windowEndMs;
  }
  return { earliestMs, count: Math.min(count, countLimit) };
}
