import { parseCron } from './cron-schedule';
import { planAfterOccurrence } from './occurrence-plan';

const at = (iso: string): Date => new Date(iso);
const isoList = (dates: Date[]): string[] => dates.map((date) => date.toISOString());

describe('planAfterOccurrence: nothing missed', () => {
  const hourly = parseCron('0 * * * *');

  it('serves the next occurrence after the one served', () => {
    const plan = planAfterOccurrence(hourly, at('2026-05-04T09:00:00Z'), at('2026-05-04T09:00:05Z'), 'fire-once');
    expect(plan).toEqual({ next: at('2026-05-04T10:00:00Z'), skipped: [], skippedCount: 0, truncated: false });
  });

  it('computes next from the served occurrence, not the finish time', () => {
    // The 09:00 run finished at 09:45: next is 10:00, not 10:45.
    const plan = planAfterOccurrence(hourly, at('2026-05-04T09:00:00Z'), at('2026-05-04T09:45:00Z'), 'skip');
    expect(plan.next).toEqual(at('2026-05-04T10:00:00Z'));
    expect(plan.skippedCount).toBe(0);
  });

  it('treats now == served and now < served (clock skew) as nothing missed', () => {
    expect(planAfterOccurrence(hourly, at('2026-05-04T09:00:00Z'), at('2026-05-04T09:00:00Z'), 'skip').next).toEqual(at('2026-05-04T10:00:00Z'));
    expect(planAfterOccurrence(hourly, at('2026-05-04T09:00:00Z'), at('2026-05-04T08:59:00Z'), 'skip').next).toEqual(at('2026-05-04T10:00:00Z'));
  });

  it('does not need `served` to be an occurrence', () => {
    const plan = planAfterOccurrence(hourly, at('2026-05-04T09:17:00Z'), at('2026-05-04T09:20:00Z'), 'fire-once');
    expect(plan.next).toEqual(at('2026-05-04T10:00:00Z'));
  });
});

describe('planAfterOccurrence: missed occurrences', () => {
  const hourly = parseCron('0 * * * *');
  const served = at('2026-05-04T09:00:00Z');
  const now = at('2026-05-04T12:30:00Z');

  it('fire-once serves the latest missed one now and skips the rest', () => {
    expect(planAfterOccurrence(hourly, served, now, 'fire-once')).toEqual({
      next: at('2026-05-04T12:00:00Z'),
      skipped: [at('2026-05-04T10:00:00Z'), at('2026-05-04T11:00:00Z')],
      skippedCount: 2,
      truncated: false,
    });
  });

  it('skip resumes after now and skips all missed', () => {
    expect(planAfterOccurrence(hourly, served, now, 'skip')).toEqual({
      next: at('2026-05-04T13:00:00Z'),
      skipped: [at('2026-05-04T10:00:00Z'), at('2026-05-04T11:00:00Z'), at('2026-05-04T12:00:00Z')],
      skippedCount: 3,
      truncated: false,
    });
  });

  it('fire-once with a single miss skips nothing', () => {
    const plan = planAfterOccurrence(hourly, served, at('2026-05-04T10:20:00Z'), 'fire-once');
    expect(plan).toEqual({ next: at('2026-05-04T10:00:00Z'), skipped: [], skippedCount: 0, truncated: false });
  });

  it('counts an occurrence exactly at now as missed', () => {
    expect(planAfterOccurrence(hourly, served, at('2026-05-04T10:00:00Z'), 'fire-once').next).toEqual(at('2026-05-04T10:00:00Z'));
    const skip = planAfterOccurrence(hourly, served, at('2026-05-04T10:00:00Z'), 'skip');
    expect(skip.next).toEqual(at('2026-05-04T11:00:00Z'));
    expect(isoList(skip.skipped)).toEqual(['2026-05-04T10:00:00.000Z']);
  });

  it('works with 6-field schedules and zones', () => {
    const schedule = parseCron('30 0 9 * * *', 'Asia/Tokyo'); // 09:00:30 JST = 00:00:30Z
    const plan = planAfterOccurrence(schedule, at('2026-05-01T00:00:30Z'), at('2026-05-04T06:00:00Z'), 'fire-once');
    expect(plan.next).toEqual(at('2026-05-04T00:00:30Z'));
    expect(isoList(plan.skipped)).toEqual(['2026-05-02T00:00:30.000Z', '2026-05-03T00:00:30.000Z']);
  });
});

describe('planAfterOccurrence: an every-second schedule after a day down', () => {
  const everySecond = parseCron('* * * * * *');
  const served = at('2026-01-01T00:00:00Z');
  const now = at('2026-01-02T00:00:00Z');

  it('fire-once: 86400 missed, the last one runs, 86399 skipped', () => {
    const plan = planAfterOccurrence(everySecond, served, now, 'fire-once');
    expect(plan.next).toEqual(now);
    expect(plan.skippedCount).toBe(86_399);
    expect(plan.truncated).toBe(false);
    expect(plan.skipped).toHaveLength(100);
    expect(plan.skipped[0]).toEqual(at('2026-01-01T00:00:01Z'));
    expect(plan.skipped[99]).toEqual(at('2026-01-01T00:01:40Z'));
  });

  it('skip: 86400 skipped, resumes one second after now', () => {
    const plan = planAfterOccurrence(everySecond, served, now, 'skip');
    expect(plan.next).toEqual(at('2026-01-02T00:00:01Z'));
    expect(plan.skippedCount).toBe(86_400);
    expect(plan.truncated).toBe(false);
  });

  it('truncates the count at countLimit, and only past it', () => {
    expect(planAfterOccurrence(everySecond, served, now, 'skip', { countLimit: 86_400 })).toMatchObject({ skippedCount: 86_400, truncated: false });
    expect(planAfterOccurrence(everySecond, served, now, 'skip', { countLimit: 86_399 })).toMatchObject({ skippedCount: 86_399, truncated: true });
    expect(planAfterOccurrence(everySecond, served, now, 'fire-once', { countLimit: 86_399 })).toMatchObject({
      skippedCount: 86_399,
      truncated: false,
    });
    expect(planAfterOccurrence(everySecond, served, now, 'skip', { countLimit: 1000 })).toMatchObject({ skippedCount: 1000, truncated: true });
  });

  it('caps at the default 100000 after two days', () => {
    const plan = planAfterOccurrence(everySecond, served, at('2026-01-03T00:00:00Z'), 'skip');
    expect(plan).toMatchObject({ skippedCount: 100_000, truncated: true });
    expect(plan.next).toEqual(at('2026-01-03T00:00:01Z'));
  });

  it('lists at most maxListed, and never more than countLimit', () => {
    expect(planAfterOccurrence(everySecond, served, now, 'skip', { maxListed: 3 }).skipped).toEqual([
      at('2026-01-01T00:00:01Z'),
      at('2026-01-01T00:00:02Z'),
      at('2026-01-01T00:00:03Z'),
    ]);
    expect(planAfterOccurrence(everySecond, served, now, 'skip', { maxListed: 0 }).skipped).toEqual([]);
    expect(planAfterOccurrence(everySecond, served, now, 'skip', { countLimit: 2 }).skipped).toHaveLength(2);
  });

  it('counts every second of a year of downtime in a zone without listing them all', () => {
    const plan = planAfterOccurrence(parseCron('* * * * * *', 'Europe/Berlin'), served, at('2027-01-01T00:00:00Z'), 'skip', {
      countLimit: 40_000_000,
    });
    expect(plan.skippedCount).toBe(365 * 86_400);
    expect(plan.truncated).toBe(false);
  });
});

describe('planAfterOccurrence: bad limits', () => {
  const schedule = parseCron('* * * * *');
  it.each([{ maxListed: -1 }, { maxListed: 1.5 }, { countLimit: -1 }, { countLimit: Number.NaN }])('rejects %p', (limits) => {
    expect(() => planAfterOccurrence(schedule, at('2026-01-01T00:00:00Z'), at('2026-01-01T01:00:00Z'), 'skip', limits)).toThrow(RangeError);
  });
});
