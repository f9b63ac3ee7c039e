/**
 * What a recurring job does about occurrences it missed (downtime, or a run that
 * outlasted its interval). The plan itself is computed in occurrence-plan.ts.
 *
 * - 'fire-once' (default): run once now, late, for the latest missed occurrence;
 *   the earlier ones are recorded as skipped.
 * - 'skip': run none of them; resume at the first occurrence after now and
 *   record every missed one as skipped.
 * - 'catch-up': run every missed occurrence, in order, oldest first, except
 *   those older than the job's catch-up window (skipped).
 *
 * Occurrences that came due while the job's own previous run was still
 * running are the overlap policy's (run-plan.ts), not the misfire policy's.
 */
import { describeValue } from './describe-value';
import { ScheduleValidationError } from './schedule-validation-error';

export type MisfirePolicy = 'fire-once' | 'skip' | 'catch-up';

export const MISFIRE_POLICIES: readonly MisfirePolicy[] = Object.freeze(['fire-once', 'skip', 'catch-up'] as const);

const DEFAULT_MISFIRE_POLICY: MisfirePolicy = 'fire-once';

function isMisfirePolicy(value: unknown): value is MisfirePolicy {
  return typeof value === 'string' && (MISFIRE_POLICIES as readonly string[]).includes(value);
}

/** Validates a request's misfire policy; `undefined` means the default, 'fire-once'. */
export function parseMisfirePolicy(value: unknown, field = 'misfirePolicy'): MisfirePolicy {
  if (value === undefined) return DEFAULT_MISFIRE_POLICY;
  if (isMisfirePolicy(value)) return value;
  const allowed = MISFIRE_POLICIES.map((policy) => `"${policy}"`).join(', ');
  throw new ScheduleValidationError(field, `${field} must be ${allowed}; got ${describeValue(value)}`);
}
