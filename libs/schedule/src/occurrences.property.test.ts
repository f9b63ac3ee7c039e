/**
 * Properties of the occurrence functions over generated valid schedules, zones
 * with DST (and one that skipped a whole day), and dates both random and
 * clustered around offset changes:
 * - nextOccurrence(s, d) > d, and the occurrence set does not depend on where a
 *   search starts;
 * - planAfterOccurrence: next > served, skipped all in (served, now], in order,
 *   and the whole plan agrees with stepping nextOccurrence by hand.
 */
import fc from 'fast-check';
import { parseCron, type CronSchedule } from './cron-schedule';
import type { MisfirePolicy } from './misfire-policy';
import { planAfterOccurrence } from './occurrence-plan';
import { firstOccurrence, nextOccurrence } from './occurrences';
import { ScheduleValidationError } from './schedule-validation-error';

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

const SECOND_OR_MINUTE = ['*', '0', '15', '30', '*/10', '*/15', '0-5', '5,35', '10-40/10', '59'];
const HOUR = ['*', '0', '1', '2', '3', '1-3', '*/2', '9-17', '23', '2,14', '0-23'];
const DAY_OF_MONTH = ['*', '?', '1', '15', 'L', '28', '29', '31', '1-7', '*/10'];
const MONTH = ['*', '*', '*', '2', '3', '10', '*/3', 'jan,jul', '3-11', '12'];
const DAY_OF_WEEK = ['*', '*', '?', '0', '1-5', 'sat,sun', '5L', '1#2', '6'];
const ZONES = [
  'UTC',
  'Europe/Berlin',
  'America/New_York',
  'Australia/Lord_Howe',
  'Asia/Kolkata',
  'America/Sao_Paulo',
  'Pacific/Chatham',
  'Africa/Casablanca',
  'Pacific/Apia',
];
/** Offset changes worth landing near: both of 2026 in Berlin, New York, Lord Howe, and Samoa's skipped day. */
const CHANGES_MS = [
  '2026-03-29T01:00:00Z',
  '2026-10-25T01:00:00Z',
  '2026-03-08T07:00:00Z',
  '2026-11-01T06:00:00Z',
  '2026-04-04T15:00:00Z',
  '2026-10-03T15:30:00Z',
  '2011-12-30T10:00:00Z',
].map(Date.parse);

const expression = fc
  .tuple(
    fc.boolean(),
    fc.constantFrom(...SECOND_OR_MINUTE),
    fc.constantFrom(...SECOND_OR_MINUTE),
    fc.constantFrom(...HOUR),
    fc.constantFrom(...DAY_OF_MONTH),
    fc.constantFrom(...MONTH),
    fc.constantFrom(...DAY_OF_WEEK),
  )
  .map(([withSeconds, second, ...rest]) => (withSeconds ? [second, ...rest] : rest).join(' '));

/** A valid schedule (combinations parseCron refuses, like 31 February, are replaced by a daily one). */
const schedule = fc.tuple(expression, fc.constantFrom(...ZONES)).map(([text, zone]): CronSchedule => {
  try {
    return parseCron(text, zone);
  } catch (error: unknown) {
    if (error instanceof ScheduleValidationError) return parseCron('30 2 * * *', zone);
    throw error;
  }
});

const instant = fc.oneof(
  fc.date({ min: new Date('1971-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }),
  fc
    .tuple(fc.constantFrom(...CHANGES_MS), fc.integer({ min: -2 * DAY_MS, max: 2 * DAY_MS }))
    .map(([changeMs, deltaMs]) => new Date(changeMs + Math.round(deltaMs / 60_000) * 60_000)),
  fc.tuple(fc.constantFrom(...CHANGES_MS), fc.integer({ min: -4 * HOUR_MS, max: 4 * HOUR_MS })).map(([changeMs, deltaMs]) => new Date(changeMs + deltaMs)),
);

describe('nextOccurrence, for valid schedules and any date', () => {
  it('is strictly later, and the same wherever the search starts', () => {
    fc.assert(
      fc.property(schedule, instant, (s, d) => {
        const next = nextOccurrence(s, d);
        expect(next).not.toBeNull();
        const nextMs = next!.getTime();
        expect(nextMs).toBeGreaterThan(d.getTime());
        expect(nextMs % 1000).toBe(0);
        // Searching from just before it, or from it inclusively, finds it again.
        expect(nextOccurrence(s, new Date(nextMs - 1))?.getTime()).toBe(nextMs);
        expect(firstOccurrence(s, next!).getTime()).toBe(nextMs);
        // firstOccurrence(d) is d itself if d is an occurrence, otherwise next.
        const firstMs = firstOccurrence(s, d).getTime();
        expect(firstMs === d.getTime() || firstMs === nextMs).toBe(true);
      }),
      { numRuns: 400 },
    );
  });
});

/** Occurrences in (served, now] by stepping nextOccurrence, or null if more than `max`. */
function missedByHand(s: CronSchedule, served: Date, now: Date, max: number): Date[] | null {
  const missed: Date[] = [];
  let cursor = nextOccurrence(s, served);
  while (cursor !== null && cursor.getTime() <= now.getTime()) {
    if (missed.length === max) return null;
    missed.push(cursor);
    cursor = nextOccurrence(s, cursor);
  }
  return missed;
}

describe('planAfterOccurrence, for valid schedules', () => {
  it('keeps next after served and skipped inside (served, now], and agrees with stepping by hand', () => {
    const delay = fc.oneof(fc.integer({ min: -HOUR_MS, max: 3 * HOUR_MS }), fc.integer({ min: 0, max: 3 * DAY_MS }));
    const policy = fc.constantFrom<MisfirePolicy>('fire-once', 'skip');
    const maxListed = fc.constantFrom(100, 3);
    fc.assert(
      fc.property(schedule, instant, delay, policy, maxListed, (s, d, delayMs, misfire, listed) => {
        const served = firstOccurrence(s, d);
        const now = new Date(served.getTime() + delayMs);
        const plan = planAfterOccurrence(s, served, now, misfire, { maxListed: listed, countLimit: 500 });

        expect(plan.next.getTime()).toBeGreaterThan(served.getTime());
        const skippedMs = plan.skipped.map((date) => date.getTime());
        for (const ms of skippedMs) {
          expect(ms).toBeGreaterThan(served.getTime());
          expect(ms).toBeLessThanOrEqual(now.getTime());
        }
        expect([...skippedMs].sort((a, b) => a - b)).toEqual(skippedMs);
        expect(new Set(skippedMs).size).toBe(skippedMs.length);
        expect(plan.skippedCount).toBeGreaterThanOrEqual(plan.skipped.length);
        expect(plan.skipped.length).toBeLessThanOrEqual(listed);
        if (misfire === 'skip') expect(plan.next.getTime()).toBeGreaterThan(now.getTime());

        const missed = missedByHand(s, served, now, 120);
        if (missed === null) return;
        const expected =
          missed.length === 0
            ? { next: nextOccurrence(s, served), skipped: [], skippedCount: 0, truncated: false }
            : misfire === 'fire-once'
              ? { next: missed[missed.length - 1], skipped: missed.slice(0, -1).slice(0, listed), skippedCount: missed.length - 1, truncated: false }
              : { next: nextOccurrence(s, now), skipped: missed.slice(0, listed), skippedCount: missed.length, truncated: false };
        expect(plan).toEqual(expected);
      }),
      { numRuns: 250 },
    );
  });
});
