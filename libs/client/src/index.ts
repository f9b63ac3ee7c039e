/**
 * @kairos/client — typed TypeScript client for the Kairos JobService and TokenService (gRPC).
 *
 * ```ts
 * const kairos = createKairosClient({ address: '127.0.0.1:50051', token });
 * const { jobId } = await kairos.createJob({ task: 'sleep', payload: { seconds: 1 }, runAt: new Date() });
 * ```
 *
 * Execution is at-least-once: job handlers must be idempotent. Every failure is
 * a KairosError with a closed `code`.
 */
export { createKairosClient, DEFAULT_DEADLINE_MS, type KairosClient, type KairosClientOptions } from './client';
export type { TlsOptions } from './credentials';
export { KairosError, KairosErrorCode, FIELD_METADATA_KEY, type ClaimedJobInfo, type KairosErrorOptions } from './error';
export {
  JOB_STATES,
  MISFIRE_POLICIES,
  OVERLAP_POLICIES,
  type OverlapPolicy,
  type AbortedRun,
  type AbortRunOptions,
  type CreateJobInput,
  type CreateJobResult,
  type CreateJobsItem,
  MAX_BATCH_JOBS,
  type Job,
  type JobPage,
  type JobState,
  type ListJobsOptions,
  type MisfirePolicy,
  type RetryPolicy,
  type RetryPolicyInput,
  type UpdateJobInput,
  type UpdateJobResult,
  type StartedBackfill,
} from './jobs';
export type { ListRunsOptions, Run, RunOutcome, RunPage } from './runs';
export type { DstMark, Occurrence, PreviewScheduleInput, SchedulePreview } from './schedules';
export type { Agent } from './agents';
export { TOKEN_ROLES, type Token, type TokenRole, type CreateTokenInput, type CreatedToken, type Whoami } from './tokens';
export {
  WEBHOOK_EVENTS,
  type CreatedWebhook,
  type CreateWebhookInput,
  type Webhook,
  type WebhookDelivery,
  type WebhookDeliveryPage,
  type WebhookEvent,
} from './webhooks';
export {
  agentJson,
  deliveryJson,
  jobJson,
  runJson,
  tokenJson,
  webhookJson,
  type AgentJson,
  type DeliveryJson,
  type JobJson,
  type RunJson,
  type TokenJson,
  type WebhookJson,
} from './json';
