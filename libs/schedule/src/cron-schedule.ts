/**
 * A recurring job's schedule: a validated cron expression and the IANA zone its
 * wall-clock readings are in. Syntax rules are in cron-expression.ts, zone
 * rules in timezone.ts, DST behaviour in occurrence-spans.ts.
 *
 * parseCron also rejects expressions that never fire. cron-parser itself turns
 * down the usual ones ('0 0 30 2 *', '0 0 31 4,6,9,11 *'); as a backstop, an
 * expression with no wall-clock match before cron-parser's search budget runs
 * out (10 000 steps from a fixed reference, centuries of calendar even for the
 * sparsest patterns) is rejected too. The calendar repeats every 400 years, and
 * an expression that fires at all does so at least every few decades (the
 * rarest, a 5th weekday of February, waits up to 40 years), so this is exact in
 * practice and does not depend on when it runs. Rare but real schedules are
 * accepted; nextOccurrence searches a century ahead to serve them.
 */
import { compileCronExpression } from './cron-expression';
import { describeValue } from './describe-value';
import { ScheduleValidationError } from './schedule-validation-error';
import { validateTimezone } from './timezone';
import { wallClockCron } from './wall-clock-cron';

/** A validated cron schedule. */
export interface CronSchedule {
  /** Normalised: trimmed, single spaces between fields. */
  readonly expression: string;
  /** Canonical IANA zone name. */
  readonly timezone: string;
}

/** 2000-01-01T00:00:00 (wall clock): the fixed start of the never-fires search. */
const NEVER_FIRES_REFERENCE_WALL_MS = Date.UTC(2000, 0, 1);

/**
 * Validates a cron expression (5 or 6 fields) and its time zone (IANA,
 * default UTC). Field names for errors default to 'schedule' and 'timezone'.
 */
export function parseCron(expression: unknown, timezone?: unknown, fields: { schedule?: string; timezone?: string } = {}): CronSchedule {
  const scheduleField = fields.schedule ?? 'schedule';
  const compiled = compileCronExpression(expression, scheduleField);
  if (wallClockCron(compiled.expression).nextAtOrAfter(NEVER_FIRES_REFERENCE_WALL_MS) === null) {
    throw new ScheduleValidationError(scheduleField, `${scheduleField}: ${describeValue(compiled.text)} never fires`);
  }
  return { expression: compiled.text, timezone: validateTimezone(timezone, fields.timezone ?? 'timezone') };
}
