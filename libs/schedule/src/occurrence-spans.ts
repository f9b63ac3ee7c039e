/**
 * DST policy: which instants a zoned cron schedule fires at.
 *
 * A cron expression describes wall-clock readings. Almost everywhere a reading
 * names exactly one instant; around an offset change it names none or two:
 *
 * - Spring forward (gap), e.g. Europe/Berlin 2026-03-29 02:00 -> 03:00,
 *   America/New_York 2026-03-08 02:00 -> 03:00. A reading inside the gap fires
 *   once, shifted later by the gap's length: '30 2 * * *' fires at 03:30 local
 *   that day (read with the offset in force before the change, as java.time
 *   resolves gaps, and as cron-parser does). If the shifted instant is also a
 *   regular occurrence ('30 2,3 * * *'), the two are the same instant and fire
 *   once.
 * - Fall back (overlap), e.g. Europe/Berlin 2026-10-25 03:00 -> 02:00,
 *   America/New_York 2026-11-01 02:00 -> 01:00. A reading inside the repeated
 *   hour fires once, at its first instant (the earlier, summer-time one):
 *   '30 2 * * *' in Berlin fires at 02:30+02:00 only.
 *   Exception: a schedule whose hour field allows all 24 hours ('0 * * * *',
 *   '*\/15 * * * *', '* * * * * *') keeps elapsed-time semantics and fires in
 *   both passes of the repeated hour, so an hourly job still runs every hour of
 *   real time; it never fires more often than its interval. (cron-parser draws
 *   the same line, on the hour field's length.)
 * Everything else is plain: the instant whose local reading matches.
 *
 * The set of occurrences is defined by the schedule alone, never by where a
 * search starts: next, previous and counting all read the same spans. (cron-
 * parser in a zone is path-dependent here: searching from 03:10 on the spring
 * day skips the shifted 03:30, and searching from inside the second pass of a
 * repeated hour returns that pass. That is why zones are handled here and
 * cron-parser only ever runs in UTC.)
 *
 * Mechanics: between two offset changes the offset is fixed, and occurrences
 * there are exactly the instants t whose reading t + offset matches the cron
 * (a "regular" span). After a fall-back change, a schedule without every hour
 * starts its regular span once the repeated readings are over. After a spring
 * change, a "gap" span covering the first (gap length) of the new offset reads
 * instants with the old offset: those are the shifted gap readings.
 *
 * Assumes offset changes of at most a day, spaced more than a day apart (true
 * of the tz database).
 */
import type { WallClockCron } from './wall-clock-cron';
import { zoneOffsetMs } from './zone-offset';
import { zoneTransitionsBetween, type ZoneTransition } from './zone-transitions';

/** Largest offset change this module accounts for (Samoa skipped a whole day in 2011). */
export const MAX_OFFSET_CHANGE_MS = 86_400_000;

/**
 * Occurrences in [fromMs, untilMs) are the instants t whose reading
 * t + offsetMs matches the cron; for a gap span, only those whose reading
 * t + shadowOffsetMs does NOT match (those are regular occurrences already, so
 * spans never share an instant).
 */
export interface OccurrenceSpan {
  readonly fromMs: number;
  readonly untilMs: number;
  readonly offsetMs: number;
  /** Gap spans only: the offset actually in force, under which matches are counted by the regular span. */
  readonly shadowOffsetMs: number | null;
}

function segmentSpans(
  cron: WallClockCron,
  startMs: number,
  endMs: number,
  offsetMs: number,
  startedBy: ZoneTransition | null,
): OccurrenceSpan[] {
  let regularFromMs = startMs;
  const spans: OccurrenceSpan[] = [];
  if (startedBy !== null) {
    const changeMs = startedBy.offsetAfterMs - startedBy.offsetBeforeMs;
    if (changeMs < 0 && !cron.everyHour) {
      // Fall back: readings repeat for -changeMs; they already fired in the first pass.
      regularFromMs = Math.min(endMs, startMs - changeMs);
    } else if (changeMs > 0) {
      // Spring forward: the skipped readings, read with the old offset.
      spans.push({
        fromMs: startMs,
        untilMs: Math.min(endMs, startMs + changeMs),
        offsetMs: startedBy.offsetBeforeMs,
        shadowOffsetMs: offsetMs,
      });
    }
  }
  spans.push({ fromMs: regularFromMs, untilMs: endMs, offsetMs, shadowOffsetMs: null });
  return spans;
}

/** Spans covering the schedule's occurrences in [fromMs, untilMs), clipped to it. */
export function occurrenceSpans(cron: WallClockCron, timezone: string, fromMs: number, untilMs: number): OccurrenceSpan[] {
  // Start a day early: a change just before fromMs still shapes spans after it.
  let segmentStartMs = fromMs - MAX_OFFSET_CHANGE_MS;
  let offsetMs = zoneOffsetMs(timezone, segmentStartMs);
  let startedBy: ZoneTransition | null = null;
  const spans: OccurrenceSpan[] = [];
  for (const transition of zoneTransitionsBetween(timezone, segmentStartMs, untilMs)) {
    spans.push(...segmentSpans(cron, segmentStartMs, transition.atMs, offsetMs, startedBy));
    segmentStartMs = transition.atMs;
    offsetMs = transition.offsetAfterMs;
    startedBy = transition;
  }
  spans.push(...segmentSpans(cron, segmentStartMs, untilMs, offsetMs, startedBy));
  return spans
    .map((span) => ({ ...span, fromMs: Math.max(span.fromMs, fromMs), untilMs: Math.min(span.untilMs, untilMs) }))
    .filter((span) => span.fromMs < span.untilMs);
}
