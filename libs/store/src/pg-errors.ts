/**
 * SQLSTATE codes the store turns into outcomes or typed errors. Everything the
 * store does not expect stays an exception (with the driver error as `cause`).
 *
 * | SQLSTATE | name                  | where it can happen                 | becomes                         |
 * |----------|-----------------------|-------------------------------------|---------------------------------|
 * | 23505    | unique_violation      | create with an idempotency key      | the `existing`/`conflict` check |
 * | 23505    | unique_violation      | a second run row for one generation | StoreInvariantError (a bug)     |
 * | 23514    | check_violation       | a write breaking a jobs/runs CHECK   | StoreInvariantError (a bug)     |
 * | 22P02    | invalid_text_representation | a job id that is not a uuid   | treated as not found            |
 * | 40001    | serialization_failure | never at READ COMMITTED             | rethrown                        |
 * | 57P01 / 08xxx | admin shutdown / connection failure | database restart | StoreUnavailableError       |
 */
export const SQLSTATE = {
  uniqueViolation: '23505',
  checkViolation: '23514',
  invalidTextRepresentation: '22P02',
  adminShutdown: '57P01',
  cannotConnectNow: '57P03',
  deadlockDetected: '40P01',
} as const;

/**
 * The SQLSTATE (or Node socket error code) of a driver error. The query builder
 * wraps driver errors ("Failed query: …"), so the `cause` chain is followed.
 */
export function sqlState(error: unknown): string | undefined {
  for (let current = error, depth = 0; current && depth < 5; depth++) {
    if (typeof current !== 'object') return undefined;
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    // Connection refused to every address of a host arrives as an AggregateError.
    const inner = (current as { errors?: unknown[] }).errors?.[0];
    current = (current as { cause?: unknown }).cause ?? inner;
  }
  return undefined;
}

/** The database cannot be reached or is restarting; callers retry later. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
}

/** A write broke a constraint that the store's own statements should never break. */
export class StoreInvariantError extends Error {
  override readonly name = 'StoreInvariantError';
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', SQLSTATE.adminShutdown, SQLSTATE.cannotConnectNow]);

export function isConnectionError(error: unknown): boolean {
  const code = sqlState(error);
  if (code !== undefined && (CONNECTION_CODES.has(code) || code.startsWith('08'))) return true;
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth++) {
    if (/Connection terminated|connection timeout|Client has encountered a connection error/i.test(current.message)) return true;
    current = current.cause;
  }
  return false;
}

/**
 * Runs one store call, turning whatever it throws into the store's errors
 * (`wrapStoreError`, named by `context`, e.g. `jobs.create`). Every public
 * store function goes through this.
 */
export async function storeCall<T>(context: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error: unknown) {
    throw wrapStoreError(context, error);
  }
}

/**
 * Wraps a driver error: connection trouble becomes StoreUnavailableError, the
 * rest keeps a cause. The cause is scrubbed (`scrubbed`): query builders put
 * the failing SQL and every parameter (payloads, idempotency keys) into their
 * error messages, and PostgreSQL's `detail` quotes key values; none of that
 * may reach a log.
 */
export function wrapStoreError(context: string, error: unknown): Error {
  if (error instanceof StoreUnavailableError || error instanceof StoreInvariantError) return error;
  if (isConnectionError(error)) return new StoreUnavailableError(`${context}: database unavailable`, { cause: scrubbed(error) });
  const code = sqlState(error);
  if (code === SQLSTATE.checkViolation || code === SQLSTATE.uniqueViolation) {
    return new StoreInvariantError(`${context}: constraint violated`, { cause: scrubbed(error) });
  }
  return new Error(`${context} failed`, { cause: scrubbed(error) });
}

/**
 * The driver's own error (the innermost one with a SQLSTATE or socket code)
 * reduced to what is safe to log: its code, its message (PostgreSQL's primary
 * message names objects, not values), the constraint and the table. A query
 * builder's wrapper, whose message is "Failed query: <sql> params: <values>",
 * is dropped.
 */
export function scrubbed(error: unknown): Error {
  let driver: Record<string, unknown> | undefined;
  for (let current = error, depth = 0; current && typeof current === 'object' && depth < 5; depth++) {
    const candidate = current as Record<string, unknown>;
    if (typeof candidate.code === 'string') {
      driver = candidate;
      break;
    }
    current = candidate.cause ?? (candidate.errors as unknown[] | undefined)?.[0];
  }
  if (driver === undefined) {
    const name = error instanceof Error ? error.name : typeof error;
    return new Error(`${name} (message withheld: it may quote query parameters)`);
  }
  const message = typeof driver.message === 'string' && !driver.message.startsWith('Failed query') ? driver.message : 'query failed';
  return Object.assign(new Error(`${message} (${String(driver.code)})`), {
    code: driver.code,
    ...(typeof driver.constraint === 'string' ? { constraint: driver.constraint } : {}),
    ...(typeof driver.table === 'string' ? { table: driver.table } : {}),
  });
}
