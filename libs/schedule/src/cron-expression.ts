/**
 * Turning cron text into a cron-parser expression, with the checks cron-parser
 * does not make and error messages a user can act on.
 *
 * Accepted: 5 fields (minute hour day-of-month month day-of-week) or 6 (second
 * first), separated by whitespace, at most MAX_EXPRESSION_CHARS. Each field is
 * a comma list of `*`, `?`, values or ranges, each with an optional `/step`;
 * month and weekday names (jan, mon, ...); `L` alone in day-of-month (last
 * day); `5L` (last Friday) and `5#2` (second Friday) in day-of-week. When
 * day-of-month and day-of-week are both restricted, either may match (classic
 * cron). The syntax is checked here, item by item, so a bad field is named in
 * plain words; value ranges and the rest are cron-parser's checks, and its
 * message is passed on with the field named. Rejected beyond cron-parser:
 * - an empty string or a wrong field count (cron-parser would read "" and
 *   "* * *" as valid, filling in defaults);
 * - `@daily`-style macros (not 5 or 6 fields);
 * - hashed values (`H`): cron-parser picks them at random per parse unless
 *   seeded, so the same text would fire at different times on every call;
 * - `W` (nearest weekday) and other characters cron-parser does not support.
 */
import { CronExpressionParser, type CronExpression } from 'cron-parser';
import { describeValue } from './describe-value';
import { ScheduleValidationError } from './schedule-validation-error';

export const MAX_EXPRESSION_CHARS = 256;

type FieldName = 'second' | 'minute' | 'hour' | 'day-of-month' | 'month' | 'day-of-week';
const SIX_FIELDS: readonly FieldName[] = ['second', 'minute', 'hour', 'day-of-month', 'month', 'day-of-week'];
/**
 * One list item per field kind: `*`, `?`, a value or a range, each with an
 * optional step; plus `L` (last day) in day-of-month, and `5L` (last Friday)
 * and `5#2` (second Friday) in day-of-week.
 */
const NUMBER = String.raw`\d+`;
const NUMBER_OR_NAME = String.raw`(?:\d+|[A-Za-z]{3})`;
const stepped = (value: string): string => String.raw`(?:\*|\?|${value}(?:-${value})?)(?:/\d+)?`;
const ITEM: Record<FieldName, string> = {
  second: stepped(NUMBER),
  minute: stepped(NUMBER),
  hour: stepped(NUMBER),
  'day-of-month': `(?:${stepped(NUMBER)}|L)`,
  month: stepped(NUMBER_OR_NAME),
  'day-of-week': `(?:${stepped(NUMBER_OR_NAME)}|${NUMBER_OR_NAME}L|${NUMBER_OR_NAME}#${NUMBER})`,
};
const FIELD_SYNTAX = Object.fromEntries(
  Object.entries(ITEM).map(([name, item]) => [name, new RegExp(`^${item}(?:,${item})*$`)]),
) as Record<FieldName, RegExp>;
/** Whatever the field text is, parsing it in this position alone isolates its errors. */
const WILDCARD_FIELDS = ['0', '*', '*', '*', '*', '*'];

/** A normalised, parsed expression. */
export interface CompiledCron {
  /** Trimmed, single spaces between fields. */
  readonly text: string;
  /** Parsed in UTC: it evaluates wall-clock readings (see wall-clock-cron.ts). */
  readonly expression: CronExpression;
}

function fieldNamesFor(fieldCount: number): readonly FieldName[] {
  return fieldCount === 6 ? SIX_FIELDS : SIX_FIELDS.slice(1);
}

function checkFieldSyntax(field: string, name: FieldName, text: string): void {
  if (FIELD_SYNTAX[name].test(text)) return;
  const hint = /h/i.test(text.replace(/[a-z]{3}/gi, '')) ? ' (hashed "H" values are not supported)' : '';
  throw new ScheduleValidationError(field, `${field}: the ${name} field ${describeValue(text)} is not valid cron syntax${hint}`);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Parses one field with every other field a wildcard; returns cron-parser's complaint, if any. */
function complaintAboutField(fields: readonly string[], index: number): string | null {
  const probe = [...WILDCARD_FIELDS];
  probe[index + (6 - fields.length)] = fields[index] ?? '*';
  try {
    CronExpressionParser.parse(probe.join(' '), { tz: 'UTC' });
    return null;
  } catch (error: unknown) {
    return errorMessage(error);
  }
}

/** A readable message for an expression cron-parser rejected. */
function explainRejection(field: string, text: string, fields: readonly string[], error: unknown): string {
  const names = fieldNamesFor(fields.length);
  for (let index = 0; index < fields.length; index++) {
    const complaint = complaintAboutField(fields, index);
    if (complaint !== null) {
      return `${field}: the ${names[index] ?? 'unknown'} field ${describeValue(fields[index])} is invalid (${complaint})`;
    }
  }
  const message = errorMessage(error);
  if (/explicit day of month/i.test(message)) {
    return `${field}: ${describeValue(text)} never fires: that day of month does not occur in the given month(s)`;
  }
  return `${field}: ${describeValue(text)} is not a valid cron expression (${message})`;
}

/** Validates and parses cron text. Throws ScheduleValidationError naming `field`. */
export function compileCronExpression(value: unknown, field: string): CompiledCron {
  if (typeof value !== 'string') {
    throw new ScheduleValidationError(field, `${field} must be a cron expression string; got ${describeValue(value)}`);
  }
  const trimmed = value.trim();
  if (trimmed === '') throw new ScheduleValidationError(field, `${field} must not be empty`);
  if (trimmed.length > MAX_EXPRESSION_CHARS) {
    throw new ScheduleValidationError(field, `${field} is too long: ${trimmed.length} characters, at most ${MAX_EXPRESSION_CHARS}`);
  }
  const fields = trimmed.split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) {
    throw new ScheduleValidationError(
      field,
      `${field} must have 5 fields (minute hour day-of-month month day-of-week) or 6 (with seconds first); ${describeValue(trimmed)} has ${fields.length}`,
    );
  }
  const names = fieldNamesFor(fields.length);
  fields.forEach((text, index) => checkFieldSyntax(field, names[index] ?? 'second', text));
  const text = fields.join(' ');
  try {
    return { text, expression: CronExpressionParser.parse(text, { tz: 'UTC', currentDate: new Date(0) }) };
  } catch (error: unknown) {
    throw new ScheduleValidationError(field, explainRejection(field, text, fields, error), { cause: error });
  }
}
