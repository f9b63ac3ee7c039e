/**
 * A CronSchedule made ready for searching: the expression compiled for
 * wall-clock matching and the zone checked. Schedules normally come from
 * parseCron, but the stored form is plain data ({expression, timezone}), so it
 * is checked again here rather than trusted; a bad one throws
 * ScheduleValidationError just as parseCron would.
 */
import { compileCronExpression } from './cron-expression';
import type { CronSchedule } from './cron-schedule';
import type { ZonedCron } from './occurrence-search';
import { validateTimezone } from './timezone';
import { wallClockCron } from './wall-clock-cron';

export function zonedCron(schedule: CronSchedule): ZonedCron {
  return {
    cron: wallClockCron(compileCronExpression(schedule.expression, 'schedule').expression),
    timezone: validateTimezone(schedule.timezone, 'timezone'),
  };
}
