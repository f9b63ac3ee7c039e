/**
 * The instants the occurrence functions accept: valid Dates in years 1-9999
 * (the range RFC 3339 can write, with a margin for searches to run past it
 * without leaving what Date, Intl and cron-parser handle). Anything else is a
 * programming error and throws RangeError, not a validation error.
 */
/** 0001-01-01T00:00:00Z */
export const MIN_INSTANT_MS = -62_135_596_800_000;
/** 9999-12-31T23:59:59.999Z */
export const MAX_INSTANT_MS = 253_402_300_799_999;

/** The epoch ms of `date`, checked against the supported range. */
export function instantMs(date: Date, name: string): number {
  // Checked by tag rather than instanceof, so Dates from another realm (vm, jest) pass.
  const ms = Object.prototype.toString.call(date) === '[object Date]' ? date.getTime() : Number.NaN;
  if (!Number.isFinite(ms)) throw new RangeError(`${name} must be a valid Date`);
  if (ms < MIN_INSTANT_MS || ms > MAX_INSTANT_MS) throw new RangeError(`${name} must fall in years 0001-9999, got ${date.toISOString()}`);
  return ms;
}
