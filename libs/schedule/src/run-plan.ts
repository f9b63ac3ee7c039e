/**
 * What a recurring job runs next once an occurrence is done, under its two
 * policies, and which occurrences it records as SKIPPED, each with the policy
 * that decided it.
 *
 * The occurrences between the one just served (`served`) and `now` were not
 * run. They fall in two stretches, split at the moment the run started
 * (`runStartedAt`):
 *
 *   served ──── B: missed before the run started ──── runStartedAt ──── D: came due while it ran ──── now
 *
 * - B (the job was late: an outage, a pause, a backlog) follows the MISFIRE
 *   policy: `fire-once` runs the latest of B, `skip` runs none, `catch-up`
 *   runs every one of B in order, oldest first, except those older than
 *   `catchupWindowMs` before now.
 * - D (the previous run outlasted the interval) follows the OVERLAP policy:
 *   `skip` runs none, `buffer-one` runs the first of D, `buffer-all` runs all
 *   of D in order (the latest `bufferLimit` of them), `cancel-other` runs the
 *   latest of D (the coordinator aborted the run it replaces; see
 *   docs/api.md) and none of B; when D is empty, B follows the misfire policy.
 *
 * The occurrences to run form one contiguous stretch of the schedule, so the
 * plan is "serve `next`, then every occurrence up to `runThrough`": a job never
 * needs a list of pending occurrences, and the settlement of each of those runs
 * continues the stretch (`continueStretch`). Every occurrence up to `now` is
 * decided once: run in the stretch, or recorded SKIPPED with its reason. The
 * plan says so in `decidedThrough`, which the next plan starts after (so an
 * occurrence skipped now is never counted again when the stretch ends).
 * Nothing after `now` is decided here; when nothing is to run, next is the
 * first occurrence after now.
 *
 * Costs do not grow with the length of the stretches: searches are direct and
 * counts stop at `countLimit` (occurrence-plan.ts does the same).
 */
import type { CronSchedule } from './cron-schedule';
import { instantMs } from './instant-range';
import type { MisfirePolicy } from './misfire-policy';
import { occurrenceAtOrAfter, occurrenceAtOrBefore, scanOccurrences, type ZonedCron } from './occurrence-search';
import { searchEndMs } from './occurrences';
import { zonedCron } from './zoned-cron';

export type OverlapPolicy = 'skip' | 'buffer-one' | 'buffer-all' | 'cancel-other';

export const OVERLAP_POLICIES: readonly OverlapPolicy[] = Object.freeze(['skip', 'buffer-one', 'buffer-all', 'cancel-other'] as const);

/** Which policy decided: recorded on runs and SKIPPED rows (`runs.reason`). */
export type PlanReason =
  | 'misfire:fire-once'
  | 'misfire:skip'
  | 'misfire:catch-up'
  | 'overlap:skip'
  | 'overlap:buffer-one'
  | 'overlap:buffer-all'
  | 'overlap:cancel-other';

/** A stretch of occurrences recorded as SKIPPED: the earliest `listed`, `count` in all. */
export interface SkippedStretch {
  reason: PlanReason;
  listed: Date[];
  count: number;
}

export interface RunPlan {
  /** The occurrence to serve next (<= now when it runs late). */
  next: Date;
  /** Why `next` runs late; null when it is simply the next occurrence after now. */
  reason: PlanReason | null;
  /** Keep serving every occurrence up to this one, in order; null when `next` is the last. */
  runThrough: Date | null;
  skipped: SkippedStretch[];
  /** Every occurrence up to here is decided (run in the stretch or skipped): the next plan starts after it. */
  decidedThrough: Date;
}

export interface RunPlanInput {
  served: Date;
  now: Date;
  /** When the run that served `served` started; occurrences from then on came due while it ran. */
  runStartedAt: Date;
  /**
   * Occurrences up to here were decided by an earlier plan (`decidedThrough`),
   * or never due (a schedule edited while the job ran): the missed ones start
   * after it. Null: right after `served`.
   */
  decidedThrough?: Date | null;
  misfire: MisfirePolicy;
  overlap: OverlapPolicy;
  /** catch-up: occurrences older than this before now are skipped, not run. Null: no bound. */
  catchupWindowMs?: number | null;
  /** buffer-all: at most this many of D run (the latest). Default 100. */
  bufferLimit?: number;
  /** SKIPPED rows listed per stretch. Default 100. */
  maxListed?: number;
  /** Counting stops here. Default 100 000. */
  countLimit?: number;
}

const DEFAULT_BUFFER_LIMIT = 100;
const DEFAULT_MAX_LISTED = 100;
const DEFAULT_COUNT_LIMIT = 100_000;

/** Continuing a planned stretch: the occurrence after `served`, while it is within `runThrough`. */
export function continueStretch(schedule: CronSchedule, served: Date, runThrough: Date): { next: Date; runThrough: Date | null } | null {
  const zoned = zonedCron(schedule);
  const throughMs = instantMs(runThrough, 'runThrough');
  const nextMs = occurrenceAtOrAfter(zoned, instantMs(served, 'served') + 1, throughMs + 1);
  if (nextMs === null) return null;
  return { next: new Date(nextMs), runThrough: nextMs < throughMs ? runThrough : null };
}

export function planNextRun(schedule: CronSchedule, input: RunPlanInput): RunPlan {
  const zoned = zonedCron(schedule);
  const servedMs = Math.max(
    instantMs(input.served, 'served'),
    input.decidedThrough === null || input.decidedThrough === undefined ? -Infinity : instantMs(input.decidedThrough, 'decidedThrough'),
  );
  const nowMs = Math.max(servedMs, instantMs(input.now, 'now'));
  const startMs = Math.min(nowMs + 1, Math.max(servedMs + 1, instantMs(input.runStartedAt, 'runStartedAt')));
  const counting = { maxListed: input.maxListed ?? DEFAULT_MAX_LISTED, countLimit: input.countLimit ?? DEFAULT_COUNT_LIMIT };
  const skipped: SkippedStretch[] = [];
  const skip = (reason: PlanReason, fromMs: number, untilMs: number) => {
    if (untilMs <= fromMs) return;
    const scan = scanOccurrences(zoned, fromMs, untilMs, counting.maxListed, counting.countLimit);
    if (scan.count > 0) skipped.push({ reason, listed: scan.earliestMs.map((ms) => new Date(ms)), count: scan.count });
  };

  // B = [servedMs + 1, startMs), D = [startMs, nowMs + 1).
  const first = (fromMs: number, untilMs: number) => (untilMs > fromMs ? occurrenceAtOrAfter(zoned, fromMs, untilMs) : null);
  const last = (fromMs: number, untilMs: number) => (untilMs > fromMs ? occurrenceAtOrBefore(zoned, untilMs - 1, fromMs) : null);
  const bFirst = first(servedMs + 1, startMs);
  const dFirst = first(startMs, nowMs + 1);

  // Runs from D: [dFromMs, dLastMs], all contiguous; what precedes dFromMs in D is skipped.
  let dRun: { fromMs: number; lastMs: number } | null = null;
  if (dFirst !== null) {
    const dLast = last(startMs, nowMs + 1)!;
    switch (input.overlap) {
      case 'skip':
        skip('overlap:skip', startMs, nowMs + 1);
        break;
      case 'buffer-one':
        dRun = { fromMs: dFirst, lastMs: dFirst };
        skip('overlap:buffer-one', dFirst + 1, nowMs + 1);
        break;
      case 'buffer-all': {
        const limit = Math.max(1, input.bufferLimit ?? DEFAULT_BUFFER_LIMIT);
        const kept = latestOccurrences(zoned, startMs, nowMs + 1, limit, dLast);
        skip('overlap:buffer-all', startMs, kept);
        dRun = { fromMs: kept, lastMs: dLast };
        break;
      }
      case 'cancel-other':
        skip('overlap:cancel-other', startMs, dLast);
        dRun = { fromMs: dLast, lastMs: dLast };
        break;
    }
  }
  // The D stretch must follow B's runs without a gap: a D run that does not start at D's first occurrence ends B's runs.
  const dContiguous = dRun === null || dRun.fromMs === dFirst;

  // Runs from B: [bFromMs, bLastMs], contiguous.
  let bRun: { fromMs: number; lastMs: number; reason: PlanReason } | null = null;
  if (bFirst !== null) {
    const bLast = last(servedMs + 1, startMs)!;
    // cancel-other drops B only when a newer occurrence (from D) replaces it; with nothing from D,
    // B follows the misfire policy like any other late stretch.
    const replacedByNewest = input.overlap === 'cancel-other' && dRun !== null;
    if (!dContiguous || replacedByNewest) {
      skip(replacedByNewest ? 'overlap:cancel-other' : 'overlap:buffer-all', servedMs + 1, startMs);
    } else {
      switch (input.misfire) {
        case 'fire-once':
          skip('misfire:fire-once', servedMs + 1, bLast);
          bRun = { fromMs: bLast, lastMs: bLast, reason: 'misfire:fire-once' };
          break;
        case 'skip':
          skip('misfire:skip', servedMs + 1, startMs);
          break;
        case 'catch-up': {
          const window = input.catchupWindowMs;
          const oldestMs = window === null || window === undefined ? servedMs + 1 : Math.max(servedMs + 1, nowMs - window);
          skip('misfire:catch-up', servedMs + 1, oldestMs);
          const from = first(oldestMs, startMs);
          if (from !== null) bRun = { fromMs: from, lastMs: bLast, reason: 'misfire:catch-up' };
          break;
        }
      }
    }
  }
  // B's runs always end at B's last occurrence, and D's (when B has runs) start at D's first: one stretch.
  const runs: Array<{ fromMs: number; lastMs: number; reason: PlanReason }> = [];
  if (bRun !== null) runs.push(bRun);
  if (dRun !== null) runs.push({ ...dRun, reason: overlapReason(input.overlap) });
  const head = runs[0];
  if (head === undefined) {
    const nextMs = occurrenceAtOrAfter(zoned, nowMs + 1, searchEndMs(nowMs + 1));
    if (nextMs === null) {
      throw new RangeError(`schedule "${schedule.expression}" has no occurrence within the search horizon after ${new Date(nowMs).toISOString()}`);
    }
    return { next: new Date(nextMs), reason: null, runThrough: null, skipped, decidedThrough: new Date(nowMs) };
  }
  const lastMs = runs[runs.length - 1]!.lastMs;
  return {
    next: new Date(head.fromMs),
    reason: head.reason,
    runThrough: lastMs > head.fromMs ? new Date(lastMs) : null,
    skipped,
    decidedThrough: new Date(nowMs),
  };
}

function overlapReason(policy: OverlapPolicy): PlanReason {
  return `overlap:${policy}`;
}

/** The earliest of the latest `limit` occurrences in [fromMs, untilMs) (whose last is `lastMs`). */
function latestOccurrences(zoned: ZonedCron, fromMs: number, untilMs: number, limit: number, lastMs: number): number {
  let earliest = lastMs;
  for (let kept = 1; kept < limit; kept++) {
    const previous = earliest - 1 >= fromMs ? occurrenceAtOrBefore(zoned, earliest - 1, fromMs) : null;
    if (previous === null) break;
    earliest = previous;
  }
  return earliest;
}

export function isOverlapPolicy(value: unknown): value is OverlapPolicy {
  return typeof value === 'string' && (OVERLAP_POLICIES as readonly string[]).includes(value);
}

/** The occurrences of `schedule` in [from, until): the first, the last, and how many (saturating at `countLimit`). */
export function occurrencesBetween(
  schedule: CronSchedule,
  from: Date,
  until: Date,
  countLimit: number,
): { first: Date; last: Date; count: number } | null {
  const zoned = zonedCron(schedule);
  const fromMs = instantMs(from, 'from');
  const untilMs = instantMs(until, 'until');
  if (untilMs <= fromMs) return null;
  const firstMs = occurrenceAtOrAfter(zoned, fromMs, untilMs);
  if (firstMs === null) return null;
  const lastMs = occurrenceAtOrBefore(zoned, untilMs - 1, fromMs)!;
  const { count } = scanOccurrences(zoned, fromMs, untilMs, 0, countLimit);
  return { first: new Date(firstMs), last: new Date(lastMs), count };
}
