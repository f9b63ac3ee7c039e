/**
 * @kairos/schedule: cron and runAt validation, occurrence computation with a
 * defined DST policy, misfire planning and retry backoff. Pure: every function
 * takes the time it needs as an argument and none reads a clock.
 */
export { ScheduleValidationError } from './schedule-validation-error';
export { MISFIRE_POLICIES, parseMisfirePolicy, type MisfirePolicy } from './misfire-policy';
export { validateTimezone } from './timezone';
export { parseRunAt } from './run-at';
export { parseCron, type CronSchedule } from './cron-schedule';
export { firstOccurrence, nextOccurrence } from './occurrences';
export { planAfterOccurrence, type OccurrencePlan } from './occurrence-plan';
export {
  continueStretch,
  isOverlapPolicy,
  occurrencesBetween,
  OVERLAP_POLICIES,
  planNextRun,
  type OverlapPolicy,
  type PlanReason,
  type RunPlan,
  type RunPlanInput,
  type SkippedStretch,
} from './run-plan';
export { jittered, retryBackoffMs, stableFraction } from './retry-backoff';
export { previewOccurrences, MAX_PREVIEW_COUNT, type DstMark, type PreviewedOccurrence } from './preview';
