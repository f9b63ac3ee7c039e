/**
 * Finding the instants at which a zone's UTC offset changes (DST starts and
 * ends, and the rarer rule changes). Intl has no transition API, so the offset
 * is sampled every PROBE_STEP_MS and each change is bisected to the second.
 *
 * Assumption (true of the tz database for every zone in use): two changes are
 * never closer together than PROBE_STEP_MS. Changes closer than that which
 * cancel out would go unseen.
 */
import { zoneOffsetMs } from './zone-offset';

export interface ZoneTransition {
  /** First instant (whole second) with the new offset. */
  readonly atMs: number;
  readonly offsetBeforeMs: number;
  readonly offsetAfterMs: number;
}

const MS_PER_SECOND = 1000;
const PROBE_STEP_MS = 12 * 60 * 60 * 1000;

function floorToSecond(ms: number): number {
  return Math.floor(ms / MS_PER_SECOND) * MS_PER_SECOND;
}

/** The first whole second in (lowMs, highMs] whose offset is not `offsetAtLow`; one must exist. */
function bisect(timezone: string, lowMs: number, highMs: number, offsetAtLow: number): number {
  let low = lowMs;
  let high = highMs;
  while (high - low > MS_PER_SECOND) {
    const middle = low + Math.floor((high - low) / 2 / MS_PER_SECOND) * MS_PER_SECOND;
    if (zoneOffsetMs(timezone, middle) === offsetAtLow) low = middle;
    else high = middle;
  }
  return high;
}

/** Offset changes with fromMs < atMs <= untilMs, in order. */
export function zoneTransitionsBetween(timezone: string, fromMs: number, untilMs: number): ZoneTransition[] {
  if (timezone === 'UTC') return [];
  const transitions: ZoneTransition[] = [];
  let lowMs = floorToSecond(fromMs);
  let lowOffsetMs = zoneOffsetMs(timezone, lowMs);
  while (lowMs < untilMs) {
    const highMs = Math.min(lowMs + PROBE_STEP_MS, floorToSecond(untilMs));
    if (highMs <= lowMs) break;
    const highOffsetMs = zoneOffsetMs(timezone, highMs);
    if (highOffsetMs !== lowOffsetMs) {
      const atMs = bisect(timezone, lowMs, highMs, lowOffsetMs);
      if (atMs > fromMs) {
        transitions.push({ atMs, offsetBeforeMs: lowOffsetMs, offsetAfterMs: zoneOffsetMs(timezone, atMs) });
      }
    }
    lowMs = highMs;
    lowOffsetMs = highOffsetMs;
  }
  return transitions;
}
