/**
 * Time zone validation. Only IANA zone names are accepted ("Europe/Berlin",
 * "UTC", "Etc/GMT+5"); offsets such as "+02:00" and abbreviations the runtime
 * does not know are rejected. The check is the runtime's own Intl database, which
 * is also what every offset computation in this package uses, so a zone that
 * passes here can always be computed with.
 *
 * The returned name is the runtime's canonical spelling (case fixed, links
 * resolved as ICU resolves them: "utc" and "Etc/UTC" -> "UTC", "US/Eastern" ->
 * "America/New_York"; on Node 20 "Asia/Kolkata" -> "Asia/Calcutta").
 */
import { describeValue } from './describe-value';
import { ScheduleValidationError } from './schedule-validation-error';

const DEFAULT_TIMEZONE = 'UTC';
const MAX_TIMEZONE_CHARS = 64;
/** Letters first, then the characters IANA names use. Rules out offsets and padding. */
const IANA_NAME_SHAPE = /^[A-Za-z][A-Za-z0-9_+\-/]*$/;
/**
 * Names already found valid, keyed in lower case (zone names are matched
 * without regard to case). Building an Intl formatter costs ~0.1 ms and every
 * occurrence query re-checks its schedule's zone. Only valid names are kept,
 * and there are a few hundred of those, so the map stays small.
 */
const canonicalByName = new Map<string, string>();

/** Validates an IANA time zone name; `undefined` means 'UTC'. Returns the canonical name. */
export function validateTimezone(value: unknown, field = 'timezone'): string {
  if (value === undefined) return DEFAULT_TIMEZONE;
  if (typeof value !== 'string') {
    throw new ScheduleValidationError(field, `${field} must be an IANA time zone name such as "Europe/Berlin"; got ${describeValue(value)}`);
  }
  if (value.length > MAX_TIMEZONE_CHARS || !IANA_NAME_SHAPE.test(value)) {
    throw new ScheduleValidationError(field, `${field} must be an IANA time zone name such as "Europe/Berlin"; got ${describeValue(value)}`);
  }
  const key = value.toLowerCase();
  const known = canonicalByName.get(key);
  if (known !== undefined) return known;
  let canonical: string;
  try {
    canonical = new Intl.DateTimeFormat('en-US', { timeZone: value }).resolvedOptions().timeZone;
  } catch (error: unknown) {
    throw new ScheduleValidationError(field, `${field} ${describeValue(value)} is not a known IANA time zone`, { cause: error });
  }
  canonicalByName.set(key, canonical);
  return canonical;
}
