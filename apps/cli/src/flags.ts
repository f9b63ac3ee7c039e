/**
 * Flag values checked before any call is made. Commander argument parsers throw
 * InvalidArgumentError (commander prints it, naming the flag); checks that need
 * several flags at once throw UsageError from the command's action.
 */
import { readFileSync } from 'node:fs';
import { JOB_STATES, type JobState } from '@kairos/client';
import { InvalidArgumentError } from 'commander';
import { UsageError } from './errors';

/** Argument parser for a whole number flag of at least `min`. */
export function wholeNumber(min: number): (value: string) => number {
  return (value) => {
    const parsed = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(parsed) || parsed < min) {
      throw new InvalidArgumentError(`expected a whole number ≥ ${min}.`);
    }
    return parsed;
  };
}

/** Argument parser for a decimal number flag (e.g. a multiplier); the server checks the range. */
export function decimal(value: string): number {
  const parsed = Number(value);
  if (value.trim() === '' || !Number.isFinite(parsed)) throw new InvalidArgumentError('expected a number.');
  return parsed;
}

/** Argument parser for `--state`, case-insensitive. */
export function jobState(value: string): Exclude<JobState, 'UNSPECIFIED'> {
  const upper = value.toUpperCase();
  const found = JOB_STATES.find((state) => state === upper);
  if (found === undefined) throw new InvalidArgumentError(`expected one of ${JOB_STATES.join(', ')}.`);
  return found;
}

// RFC 3339 date-time with a mandatory zone: 2030-01-01T09:00:00Z, 2030-01-01T10:00:00.5+01:00.
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Argument parser for `--run-at`. */
export function rfc3339(value: string): string {
  if (!RFC3339.test(value) || Number.isNaN(Date.parse(value))) {
    throw new InvalidArgumentError('expected an RFC 3339 timestamp with a zone, e.g. 2030-01-01T09:00:00Z.');
  }
  return value;
}

/** A JSON object from the text of `flag`; anything else is a usage error naming the flag. */
export function jsonObjectFlag(text: string, flag: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new UsageError(`${flag} is not valid JSON: ${reason}`, flag);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    const kind = value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`;
    throw new UsageError(`${flag} must be a JSON object such as '{"seconds":1}', got ${kind}`, flag);
  }
  return value as Record<string, unknown>;
}

/** The payload from `--payload` or `--payload-file` (at most one of them). */
export function payloadFromFlags(options: { payload?: string; payloadFile?: string }): Record<string, unknown> | undefined {
  if (options.payload !== undefined && options.payloadFile !== undefined) {
    throw new UsageError('give --payload or --payload-file, not both', '--payload');
  }
  if (options.payload !== undefined) return jsonObjectFlag(options.payload, '--payload');
  if (options.payloadFile !== undefined) {
    return jsonObjectFlag(readFlagFile(options.payloadFile, '--payload-file'), '--payload-file');
  }
  return undefined;
}

/** The contents of a file named by a flag; unreadable is a usage error naming the flag. */
export function readFlagFile(file: string, flag: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    throw new UsageError(`${flag}: cannot read ${file}: ${reason}`, flag);
  }
}
