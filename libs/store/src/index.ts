export { createStore, createPool, type Store, type StoreOptions } from './store';
export type { JobRecord, JobState, NewJob, CreateResult, CreatedJobId, JobFilter, JobPage, JobQueries } from './jobs';
export { JOB_STATES, MAX_CREATE_BATCH } from './jobs';
export type { RunRecord, RunOutcome, RunQueries } from './runs';
export type {
  LeaseRef,
  HeldLeaseRef,
  ClaimRequest,
  ClaimedJob,
  RenewResult,
  LeaseLostReason,
  CompletionReport,
  CompleteResult,
  ReleasedLease,
  ReleaseResult,
  WithdrawOutcome,
  WithdrawRequest,
  CancelResult,
  AbortRequestInput,
  EditResult,
  JobEdit,
  BackfillResult,
  CancelBackfillResult,
  AbortResult,
  ControlResult,
  ReapResult,
  LeaseStatements,
} from './lease';
export { isJobId, MAX_ERROR_CHARS, CLAIM_SQL, heldLeases, holderArrays, DEFAULT_ABORT_GRACE_MS, MAX_BACKFILL_OCCURRENCES, WITHDRAW_HOLD_MS, leaseStatements } from './lease';
export { NO_JOB_RETRY, effectiveRetry, type AttemptOutcome, type JobRetry, type RetryPolicy } from './settle';
export { ABORT_CHANNEL, WITHDRAW_CHANNEL, type ChangeHandlers, type ChangeListener } from './notifications';
export { migrate, loadMigrations, MIGRATIONS_DIR, pendingMigrations } from './migrate';
export type { JobSweepBatch, RetentionBatch } from './retention';
export { startEmbeddedPostgres, freePort, type EmbeddedPostgres, type EmbeddedPostgresOptions } from './embedded';
export { StoreUnavailableError, StoreInvariantError, isConnectionError } from './pg-errors';
export { TOKEN_ROLES, TOKEN_PREFIX, hashSecret, type TokenRole, type TokenRecord, type NewToken, type RevokeResult, type LiveToken, type TokenQueries } from './tokens';
export type { CoordinatorRow, PresenceQueries, PresenceRow, PresentAgent } from './presence';
export { schemaHash, type AdvertisedSchema, type TaskSchemaQueries, type TaskSchemaRecord } from './task-schemas';
export { WEBHOOK_EVENTS, WEBHOOK_SECRET_PREFIX } from './webhooks';
export type { DeliveryRecord, DeliveryState, DueDelivery, WebhookEvent, WebhookQueries, WebhookRecord } from './webhooks';
