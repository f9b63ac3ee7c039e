/**
 * The CLI's one error edge: what each failure prints and which exit code it
 * gives. Scripts can rely on the codes:
 *
 *   0  success
 *   1  anything else (coordinator unreachable, auth, internal errors)
 *   2  invalid argument or usage (bad flag, missing option, server-side INVALID_ARGUMENT)
 *   3  not found
 *   4  conflict: the job's state forbids the call (FAILED_PRECONDITION, e.g.
 *      cancelling a CLAIMED job) or an idempotency key reused with another request
 *
 * A command that answers many items (`jobs create-many`) exits with the code
 * of its worst refused item: 2 when any was invalid, else 4 for conflicts.
 */
import { KairosError, type KairosErrorCode } from '@kairos/client';
import { CommanderError } from 'commander';
import type { TextSink } from './io';

export const ExitCode = {
  Ok: 0,
  Failure: 1,
  Usage: 2,
  NotFound: 3,
  Conflict: 4,
} as const;

export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** A command line the CLI refuses before doing anything; `flag` names the culprit. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  constructor(
    message: string,
    readonly flag?: string,
  ) {
    super(message);
  }
}

/** Some items of a many-item command were refused; each was already reported. */
export class ItemsRefused extends Error {
  override readonly name = 'ItemsRefused';
  constructor(
    message: string,
    readonly exitCode: ExitCode,
  ) {
    super(message);
  }
}

export const EXIT_CODE_FOR: Record<KairosErrorCode, ExitCode> = {
  'invalid-argument': ExitCode.Usage,
  'not-found': ExitCode.NotFound,
  'failed-precondition': ExitCode.Conflict,
  'already-exists': ExitCode.Conflict,
  aborted: ExitCode.Conflict,
  unauthenticated: ExitCode.Failure,
  'permission-denied': ExitCode.Failure,
  unavailable: ExitCode.Failure,
  'deadline-exceeded': ExitCode.Failure,
  internal: ExitCode.Failure,
  unknown: ExitCode.Failure,
};

/**
 * Prints `error: <message>` (plus the field, when the server named one) to
 * stderr and returns the exit code. Commander has already printed its own
 * usage errors; those only need their code.
 */
export function reportError(error: unknown, stderr: TextSink): ExitCode {
  if (error instanceof CommanderError) {
    // --help and --version end the program successfully; everything else is usage.
    return error.code === 'commander.helpDisplayed' || error.code === 'commander.version'
      ? ExitCode.Ok
      : ExitCode.Usage;
  }
  if (error instanceof UsageError) {
    stderr.write(`error: ${error.message}\n`);
    return ExitCode.Usage;
  }
  if (error instanceof ItemsRefused) {
    stderr.write(`error: ${error.message}\n`);
    return error.exitCode;
  }
  const failure = KairosError.from(error);
  const field = failure.field === undefined ? '' : ` (field: ${failure.field})`;
  stderr.write(`error: ${failure.message}${field}\n`);
  return EXIT_CODE_FOR[failure.code];
}
