/**
 * The DST policy (described in occurrence-spans.ts), pinned down for
 * Europe/Berlin and America/New_York, both transitions of 2026:
 * - Berlin: 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z); 2026-10-25 03:00 CEST -> 02:00 CET (01:00Z).
 * - New York: 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z); 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z).
 */
import { CronExpressionParser } from 'cron-parser';
import fc from 'fast-check';
import { parseCron } from './cron-schedule';
import { firstOccurrence, nextOccurrence } from './occurrences';
import { planAfterOccurrence } from './occurrence-plan';

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;

/** Every occurrence in [from, until), found by stepping nextOccurrence. */
function occurrencesBetween(expression: string, timezone: string, from: string, until: string): string[] {
  const schedule = parseCron(expression, timezone);
  const untilMs = Date.parse(until);
  const found: string[] = [];
  let cursor: Date | null = firstOccurrence(schedule, new Date(from));
  while (cursor !== null && cursor.getTime() < untilMs) {
    found.push(cursor.toISOString());
    cursor = nextOccurrence(schedule, cursor);
  }
  return found;
}

describe('spring forward: a time in the gap runs once, shifted by the gap', () => {
  it('Europe/Berlin 02:30 runs at 03:30 CEST on 2026-03-29', () => {
    expect(occurrencesBetween('30 2 * * *', 'Europe/Berlin', '2026-03-27T00:00:00Z', '2026-03-31T00:00:00Z')).toEqual([
      '2026-03-27T01:30:00.000Z', // 02:30 CET, normal
      '2026-03-28T01:30:00.000Z', // 02:30 CET, normal
      '2026-03-29T01:30:00.000Z', // 03:30 CEST: 02:30 does not exist
      '2026-03-30T00:30:00.000Z', // 02:30 CEST, normal
    ]);
  });

  it('America/New_York 02:30 runs at 03:30 EDT on 2026-03-08', () => {
    expect(occurrencesBetween('30 2 * * *', 'America/New_York', '2026-03-06T00:00:00Z', '2026-03-10T00:00:00Z')).toEqual([
      '2026-03-06T07:30:00.000Z', // 02:30 EST
      '2026-03-07T07:30:00.000Z', // 02:30 EST
      '2026-03-08T07:30:00.000Z', // 03:30 EDT: 02:30 does not exist
      '2026-03-09T06:30:00.000Z', // 02:30 EDT
    ]);
  });

  it('does not depend on where the search starts', () => {
    const schedule = parseCron('30 2 * * *', 'Europe/Berlin');
    // From 03:10 CEST, after the gap but before the shifted 03:30.
    expect(nextOccurrence(schedule, new Date('2026-03-29T01:10:00Z'))?.toISOString()).toBe('2026-03-29T01:30:00.000Z');
    expect(firstOccurrence(schedule, new Date('2026-03-29T01:30:00Z')).toISOString()).toBe('2026-03-29T01:30:00.000Z');
    expect(nextOccurrence(schedule, new Date('2026-03-29T01:30:00Z'))?.toISOString()).toBe('2026-03-30T00:30:00.000Z');
  });

  it('fires once when the shifted time is also a regular one', () => {
    expect(occurrencesBetween('30 2,3 * * *', 'Europe/Berlin', '2026-03-28T12:00:00Z', '2026-03-30T12:00:00Z')).toEqual([
      '2026-03-29T01:30:00.000Z', // 02:30 (shifted) and 03:30 CEST are one instant
      '2026-03-30T00:30:00.000Z', // 02:30 CEST
      '2026-03-30T01:30:00.000Z', // 03:30 CEST
    ]);
  });

  it('leaves times outside the gap alone', () => {
    expect(occurrencesBetween('30 1,3 * * *', 'Europe/Berlin', '2026-03-29T00:00:00Z', '2026-03-29T12:00:00Z')).toEqual([
      '2026-03-29T00:30:00.000Z', // 01:30 CET
      '2026-03-29T01:30:00.000Z', // 03:30 CEST
    ]);
  });

  it('shifts a half-hour gap by half an hour (Australia/Lord_Howe, 2026-10-04 02:00 -> 02:30)', () => {
    // +10:30 -> +11:00 at 15:30Z on 2026-10-03.
    expect(occurrencesBetween('15 2 * * *', 'Australia/Lord_Howe', '2026-10-02T12:00:00Z', '2026-10-05T12:00:00Z')).toEqual([
      '2026-10-02T15:45:00.000Z', // 02:15 +10:30
      '2026-10-03T15:45:00.000Z', // 02:45 +11:00: 02:15 does not exist
      '2026-10-04T15:15:00.000Z', // 02:15 +11:00
    ]);
  });

  it('keeps hourly and sub-hourly schedules on real time (no extra, none lost)', () => {
    expect(occurrencesBetween('0 * * * *', 'Europe/Berlin', '2026-03-28T23:00:00Z', '2026-03-29T03:00:00Z')).toEqual([
      '2026-03-28T23:00:00.000Z', // 00:00 CET
      '2026-03-29T00:00:00.000Z', // 01:00 CET
      '2026-03-29T01:00:00.000Z', // 03:00 CEST
      '2026-03-29T02:00:00.000Z', // 04:00 CEST
    ]);
    expect(occurrencesBetween('*/15 * * * *', 'America/New_York', '2026-03-08T06:30:00Z', '2026-03-08T07:31:00Z')).toEqual([
      '2026-03-08T06:30:00.000Z', // 01:30 EST
      '2026-03-08T06:45:00.000Z',
      '2026-03-08T07:00:00.000Z', // 03:00 EDT
      '2026-03-08T07:15:00.000Z',
      '2026-03-08T07:30:00.000Z',
    ]);
  });

  it('shifts every second of a skipped hour into the hour after', () => {
    const plan = planAfterOccurrence(
      parseCron('* * 2 * * *', 'Europe/Berlin'),
      new Date('2026-03-28T12:00:00Z'),
      new Date('2026-03-29T12:00:00Z'),
      'skip',
    );
    expect(plan.skippedCount).toBe(3600);
    expect(plan.skipped[0]?.toISOString()).toBe('2026-03-29T01:00:00.000Z'); // 03:00:00 CEST
    expect(plan.next.toISOString()).toBe('2026-03-30T00:00:00.000Z'); // 02:00:00 CEST the next day
  });
});

describe('fall back: a time in the repeated hour runs once, at its first instant', () => {
  it('Europe/Berlin 02:30 runs at 02:30 CEST only on 2026-10-25', () => {
    expect(occurrencesBetween('30 2 * * *', 'Europe/Berlin', '2026-10-23T00:00:00Z', '2026-10-27T00:00:00Z')).toEqual([
      '2026-10-23T00:30:00.000Z', // 02:30 CEST
      '2026-10-24T00:30:00.000Z', // 02:30 CEST
      '2026-10-25T00:30:00.000Z', // 02:30 CEST, first pass; not again at 01:30Z
      '2026-10-26T01:30:00.000Z', // 02:30 CET
    ]);
  });

  it('America/New_York 01:30 runs at 01:30 EDT only on 2026-11-01', () => {
    expect(occurrencesBetween('30 1 * * *', 'America/New_York', '2026-10-30T12:00:00Z', '2026-11-03T12:00:00Z')).toEqual([
      '2026-10-31T05:30:00.000Z', // 01:30 EDT
      '2026-11-01T05:30:00.000Z', // 01:30 EDT, first pass; not again at 06:30Z
      '2026-11-02T06:30:00.000Z', // 01:30 EST
      '2026-11-03T06:30:00.000Z', // 01:30 EST
    ]);
  });

  it('does not depend on where the search starts', () => {
    const schedule = parseCron('30 2 * * *', 'Europe/Berlin');
    // From 02:10 CET, inside the second pass, before its 02:30.
    expect(nextOccurrence(schedule, new Date('2026-10-25T01:10:00Z'))?.toISOString()).toBe('2026-10-26T01:30:00.000Z');
    expect(firstOccurrence(schedule, new Date('2026-10-25T01:30:00Z')).toISOString()).toBe('2026-10-26T01:30:00.000Z');
    expect(nextOccurrence(schedule, new Date('2026-10-25T00:30:00Z'))?.toISOString()).toBe('2026-10-26T01:30:00.000Z');
  });

  it('runs other hours of the day normally', () => {
    expect(occurrencesBetween('0 0,1,3,4 * * *', 'Europe/Berlin', '2026-10-24T21:00:00Z', '2026-10-25T04:00:00Z')).toEqual([
      '2026-10-24T22:00:00.000Z', // 00:00 CEST
      '2026-10-24T23:00:00.000Z', // 01:00 CEST
      '2026-10-25T02:00:00.000Z', // 03:00 CET
      '2026-10-25T03:00:00.000Z', // 04:00 CET
    ]);
  });

  it('fires a schedule without every hour once, even every two hours', () => {
    expect(occurrencesBetween('0 */2 * * *', 'Europe/Berlin', '2026-10-24T21:00:00Z', '2026-10-25T06:00:00Z')).toEqual([
      '2026-10-24T22:00:00.000Z', // 00:00 CEST
      '2026-10-25T00:00:00.000Z', // 02:00 CEST; 02:00 CET does not fire
      '2026-10-25T03:00:00.000Z', // 04:00 CET
      '2026-10-25T05:00:00.000Z', // 06:00 CET
    ]);
  });

  it('fires hourly and sub-hourly schedules in both passes (elapsed time)', () => {
    expect(occurrencesBetween('0 * * * *', 'Europe/Berlin', '2026-10-24T23:00:00Z', '2026-10-25T03:00:00Z')).toEqual([
      '2026-10-24T23:00:00.000Z', // 01:00 CEST
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T01:00:00.000Z', // 02:00 CET
      '2026-10-25T02:00:00.000Z', // 03:00 CET
    ]);
    expect(occurrencesBetween('30 * * * *', 'America/New_York', '2026-11-01T04:00:00Z', '2026-11-01T08:00:00Z')).toEqual([
      '2026-11-01T04:30:00.000Z', // 00:30 EDT
      '2026-11-01T05:30:00.000Z', // 01:30 EDT
      '2026-11-01T06:30:00.000Z', // 01:30 EST
      '2026-11-01T07:30:00.000Z', // 02:30 EST
    ]);
    expect(occurrencesBetween('*/20 * * * *', 'Europe/Berlin', '2026-10-25T00:00:00Z', '2026-10-25T02:00:00Z')).toHaveLength(6);
  });

  it('counts 25 hourly runs on the long day and 23 on the short one', () => {
    expect(occurrencesBetween('0 * * * *', 'Europe/Berlin', '2026-10-24T22:00:00Z', '2026-10-25T23:00:00Z')).toHaveLength(25);
    expect(occurrencesBetween('0 * * * *', 'Europe/Berlin', '2026-03-28T23:00:00Z', '2026-03-29T22:00:00Z')).toHaveLength(23);
  });

  it('records the single run, not a second one, as skipped', () => {
    const plan = planAfterOccurrence(
      parseCron('30 2 * * *', 'Europe/Berlin'),
      new Date('2026-10-24T00:30:00Z'),
      new Date('2026-10-26T12:00:00Z'),
      'fire-once',
    );
    expect(plan.next.toISOString()).toBe('2026-10-26T01:30:00.000Z');
    expect(plan.skipped.map((date) => date.toISOString())).toEqual(['2026-10-25T00:30:00.000Z']);
    expect(plan.skippedCount).toBe(1);
  });
});

/**
 * An independent statement of the policy, minute by minute: walk every instant
 * and read the local time with Intl. A reading that matches fires at the first
 * instant showing it (at every instant, if the hour field has all 24 hours).
 * A matching reading no instant shows (in a gap) fires at reading minus the
 * offset in force just before the gap.
 */
function oracle(expression: string, timezone: string, fromMs: number, untilMs: number): string[] {
  const cron = CronExpressionParser.parse(expression, { tz: 'UTC' });
  const everyHour = cron.fields.hour.values.length === 24;
  const formatter = new Intl.DateTimeFormat('en-US', {
    timeZone: timezone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
  });
  const readingAt = (instantMs: number): number => {
    const parts = Object.fromEntries(formatter.formatToParts(new Date(instantMs)).map((part) => [part.type, Number(part.value)]));
    return Date.UTC(parts['year'] ?? 0, (parts['month'] ?? 1) - 1, parts['day'], parts['hour'], parts['minute']);
  };
  const firing = new Set<number>();
  const seen = new Set<number>();
  let previousReading = readingAt(fromMs - MINUTE_MS);
  for (let instantMs = fromMs; instantMs < untilMs; instantMs += MINUTE_MS) {
    const reading = readingAt(instantMs);
    for (let skipped = previousReading + MINUTE_MS; skipped < reading; skipped += MINUTE_MS) {
      const offsetBeforeMs = previousReading - (instantMs - MINUTE_MS);
      if (cron.includesDate(new Date(skipped))) firing.add(skipped - offsetBeforeMs);
    }
    if (cron.includesDate(new Date(reading)) && (everyHour || !seen.has(reading))) firing.add(instantMs);
    seen.add(reading);
    previousReading = reading;
  }
  return [...firing].sort((a, b) => a - b).map((ms) => new Date(ms).toISOString());
}

describe('agrees with a minute-by-minute statement of the policy', () => {
  const windows: [string, string, string][] = [
    ['Europe/Berlin', '2026-03-28T12:00:00Z', '2026-03-30T12:00:00Z'],
    ['Europe/Berlin', '2026-10-24T12:00:00Z', '2026-10-26T12:00:00Z'],
    ['America/New_York', '2026-03-07T12:00:00Z', '2026-03-09T12:00:00Z'],
    ['America/New_York', '2026-10-31T12:00:00Z', '2026-11-02T12:00:00Z'],
    ['Australia/Lord_Howe', '2026-04-04T00:00:00Z', '2026-04-06T00:00:00Z'],
    ['Australia/Lord_Howe', '2026-10-03T00:00:00Z', '2026-10-05T00:00:00Z'],
  ];
  const expressions = ['30 2 * * *', '30 1 * * *', '0 * * * *', '*/20 * * * *', '0 */2 * * *', '15,45 1-3 * * *', '*/7 2 * * *', '59 1 * * *', '0 3 * * *'];

  it.each(windows)('in %s from %s', (timezone, from, until) => {
    for (const expression of expressions) {
      const expected = oracle(expression, timezone, Date.parse(from), Date.parse(until));
      expect({ expression, occurrences: occurrencesBetween(expression, timezone, from, until) }).toEqual({ expression, occurrences: expected });
    }
  });
});

describe('agrees with the minute-by-minute statement for generated schedules', () => {
  const windows: [string, number][] = [
    ['Europe/Berlin', Date.parse('2026-03-29T01:00:00Z')],
    ['Europe/Berlin', Date.parse('2026-10-25T01:00:00Z')],
    ['America/New_York', Date.parse('2026-03-08T07:00:00Z')],
    ['America/New_York', Date.parse('2026-11-01T06:00:00Z')],
    ['Australia/Lord_Howe', Date.parse('2026-10-03T15:30:00Z')],
    ['Pacific/Apia', Date.parse('2011-12-30T10:00:00Z')],
  ];
  const minute = fc.constantFrom('*', '0', '30', '*/20', '15,45', '59', '0-10/5');
  const hour = fc.constantFrom('*', '0', '1', '2', '3', '1-3', '*/2', '23', '0-23', '2,14');
  const dayOfWeek = fc.constantFrom('*', '0', '1-5', '5', '6');

  it('around every change', () => {
    fc.assert(
      fc.property(fc.constantFrom(...windows), minute, hour, dayOfWeek, ([timezone, changeMs], m, h, dow) => {
        const expression = `${m} ${h} * * ${dow}`;
        const fromMs = changeMs - 30 * HOUR_MS;
        const untilMs = changeMs + 30 * HOUR_MS;
        expect(occurrencesBetween(expression, timezone, new Date(fromMs).toISOString(), new Date(untilMs).toISOString())).toEqual(
          oracle(expression, timezone, fromMs, untilMs),
        );
      }),
      { numRuns: 40 },
    );
  });
});
