/**
 * How a rejected input is quoted inside an error message: short, on one line,
 * and never the whole of a huge string.
 */
const MAX_QUOTED_CHARS = 64;

/** A short, printable description of `value` for error messages. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') {
    const shown = value.length > MAX_QUOTED_CHARS ? `${value.slice(0, MAX_QUOTED_CHARS)}…` : value;
    return JSON.stringify(shown);
  }
  if (value === undefined) return 'no value';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  // NaN reads like a computation gone wrong; say what the caller sent.
  if (typeof value === 'number' && Number.isNaN(value)) return 'a number that is not a number';
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return `${typeof value} ${String(value)}`;
  return `a value of type ${typeof value}`;
}
