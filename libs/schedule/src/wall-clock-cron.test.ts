import { CronExpressionParser, type CronExpression } from 'cron-parser';
import { wallClockCron } from './wall-clock-cron';

const SECOND_MS = 1000;

function compile(expression: string) {
  return wallClockCron(CronExpressionParser.parse(expression, { tz: 'UTC' }));
}

/** Matches in [from, until) by testing every second. */
function bruteForce(expression: string, fromMs: number, untilMs: number): number[] {
  const cron = CronExpressionParser.parse(expression, { tz: 'UTC' });
  const found: number[] = [];
  for (let ms = Math.ceil(fromMs / SECOND_MS) * SECOND_MS; ms < untilMs; ms += SECOND_MS) {
    if (cron.includesDate(new Date(ms))) found.push(ms);
  }
  return found;
}

describe('wallClockCron', () => {
  const fromMs = Date.parse('2026-02-27T22:58:30.250Z');
  const untilMs = Date.parse('2026-03-01T01:02:10.500Z');

  it.each(['* * * * * *', '*/7 59,0-2 23,0 * * *', '0 */5 * * * *', '10-20 58 22 * * *', '0 0 0 L * *', '30 1 1 * * 0', '* * * 2 * *'])(
    'counts, lists and matches %s like a second-by-second scan',
    (expression) => {
      const cron = compile(expression);
      const expected = bruteForce(expression, fromMs, untilMs);
      expect(cron.countBetween(fromMs, untilMs, Number.MAX_SAFE_INTEGER)).toBe(expected.length);
      const listed: number[] = [];
      cron.forEachBetween(fromMs, untilMs, (wallMs) => listed.push(wallMs) > 0);
      expect(listed).toEqual(expected);
      for (const ms of expected.slice(0, 50)) expect(cron.matches(ms)).toBe(true);
      expect(cron.matches((expected[0] ?? fromMs) + 1)).toBe(false);
    },
  );

  it('saturates counts at the limit', () => {
    expect(compile('* * * * * *').countBetween(0, 86_400_000, 1000)).toBe(1000);
  });

  it('includes bounds as documented', () => {
    const cron = compile('0 * * * *');
    const hourMs = Date.parse('2026-05-04T10:00:00Z');
    expect(cron.nextAtOrAfter(hourMs)).toBe(hourMs);
    expect(cron.nextAtOrAfter(hourMs + 1)).toBe(hourMs + 3_600_000);
    expect(cron.prevAtOrBefore(hourMs)).toBe(hourMs);
    expect(cron.prevAtOrBefore(hourMs - 1)).toBe(hourMs - 3_600_000);
    expect(cron.countBetween(hourMs, hourMs + 3_600_000, 10)).toBe(1);
    expect(cron.countBetween(hourMs + 1, hourMs + 3_600_001, 10)).toBe(1);
  });

  it('tells whether the hour field has every hour', () => {
    expect(compile('*/5 * * * *').everyHour).toBe(true);
    expect(compile('0 0-23 * * *').everyHour).toBe(true);
    expect(compile('0 */2 * * *').everyHour).toBe(false);
  });

  it('searches across years', () => {
    const cron = compile('0 0 29 2 *');
    expect(cron.nextAtOrAfter(Date.parse('2026-03-01T00:00:00Z'))).toBe(Date.parse('2028-02-29T00:00:00Z'));
    expect(cron.prevAtOrBefore(Date.parse('2026-03-01T00:00:00Z'))).toBe(Date.parse('2024-02-29T00:00:00Z'));
  });

  it("turns cron-parser's loop-limit error into null and passes other errors on", () => {
    // No expression cron-parser accepts exhausts its budget, so stand one in.
    const parsed = CronExpressionParser.parse('* * * * *', { tz: 'UTC' });
    const failing = (message: string): CronExpression =>
      ({
        fields: parsed.fields,
        reset: () => undefined,
        next: () => {
          throw new Error(message);
        },
        prev: () => {
          throw new Error(message);
        },
      }) as unknown as CronExpression;
    const exhausted = wallClockCron(failing('Invalid expression, loop limit exceeded'));
    expect(exhausted.nextAtOrAfter(0)).toBeNull();
    expect(exhausted.prevAtOrBefore(0)).toBeNull();
    expect(exhausted.countBetween(0, 86_400_000, 10)).toBe(0);
    expect(() => wallClockCron(failing('something else')).nextAtOrAfter(0)).toThrow('something else');
  });
});
