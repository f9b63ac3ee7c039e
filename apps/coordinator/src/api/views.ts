/**
 * The JSON the REST API answers with, as zod schemas: the TypeScript types of
 * job-commands.ts are inferred from them and openapi.ts turns them into the
 * OpenAPI document, so the shape is written once. Every response field is
 * always present (null when it has no value), never omitted.
 */
import { z } from 'zod';
import { MISFIRE_POLICIES, OVERLAP_POLICIES } from '@kairos/schedule';
import { JOB_STATES, TOKEN_ROLES, WEBHOOK_EVENTS, type RunOutcome } from '@kairos/store';
import type { DstMark } from '@kairos/schedule';

const instant = z.string().meta({ format: 'date-time', description: 'RFC 3339, UTC' });
const nullableInstant = instant.nullable();
const enumOf = <T extends string>(values: readonly T[]) => z.enum(values as [T, ...T[]]);

export const RUN_OUTCOMES = ['RUNNING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'LEASE_EXPIRED', 'CANCELLED', 'SKIPPED'] as const satisfies readonly RunOutcome[];
export const DST_MARKS = ['gap-shifted', 'repeated-first', 'repeated-elapsed'] as const satisfies readonly DstMark[];

export const JobViewSchema = z.object({
  jobId: z.string().meta({ format: 'uuid' }),
  namespace: z.string(),
  name: z.string().nullable(),
  task: z.string(),
  schedule: z.string().nullable().meta({ description: 'Cron expression of a recurring job; null for a one-off job' }),
  runAt: nullableInstant.meta({ description: 'When a one-off job is due; null for a recurring job' }),
  timezone: z.string().meta({ description: 'IANA zone the schedule is read in' }),
  payload: z.record(z.string(), z.unknown()),
  state: enumOf(JOB_STATES),
  nextRunAt: nullableInstant.meta({ description: 'When the job may next start (an occurrence, or a retry time); null when finished' }),
  occurrenceAt: nullableInstant.meta({ description: 'The schedule occurrence the pending or running attempt serves' }),
  attempt: z.number().int(),
  maxAttempts: z.number().int(),
  timeoutSeconds: z.number().nullable().meta({ description: 'Longest run of one attempt; null: no timeout' }),
  misfirePolicy: enumOf(MISFIRE_POLICIES),
  idempotencyKey: z.string().nullable(),
  leaseGeneration: z.number().int().meta({ description: 'The fencing token of the latest claim' }),
  leaseOwner: z.string().nullable(),
  abort: z
    .object({ requestedAt: instant, requestedBy: z.string().nullable(), stopSchedule: z.boolean() })
    .nullable()
    .meta({ description: 'An abort of the running run in progress (until the run has ended); null otherwise' }),
  retry: z
    .object({ initialIntervalMs: z.number().int(), maxIntervalMs: z.number().int(), multiplier: z.number(), jitter: z.number() })
    .meta({ description: "The retry policy in force: the job's own values, the coordinator's defaults for the rest" }),
  jitterMs: z.number().int().meta({ description: "A recurring job's occurrences start up to this much later (fixed per occurrence); 0: on time" }),
  pauseOnFailure: z.boolean(),
  pausedReason: z.string().nullable().meta({ description: 'Why the job was paused automatically; null otherwise' }),
  version: z.number().int().meta({ description: 'Grows by one on every edit; the ETag of GET /jobs/{id}' }),
  overlapPolicy: enumOf(OVERLAP_POLICIES),
  catchupWindowMs: z.number().int().nullable().meta({ description: 'catch-up: missed occurrences older than this are skipped; null: no bound' }),
  backfill: z
    .object({ through: nullableInstant, resumeAt: instant })
    .nullable()
    .meta({ description: 'A backfill in progress: the occurrences up to `through` run next, then the schedule resumes at `resumeAt`' }),
  createdAt: instant,
  updatedAt: instant,
});

export const RunViewSchema = z.object({
  runId: z.string().meta({ description: 'Decimal; grows with every run of the job' }),
  jobId: z.string().meta({ format: 'uuid' }),
  attempt: z.number().int(),
  leaseGeneration: z.number().int().nullable().meta({ description: 'The fencing token the run held; null for a SKIPPED occurrence' }),
  scheduledFor: instant,
  startedAt: nullableInstant,
  finishedAt: nullableInstant,
  outcome: enumOf(RUN_OUTCOMES),
  workerId: z.string().nullable(),
  error: z.string().nullable(),
  abortedBy: z.string().nullable().meta({ description: "Who aborted the run (a token's name and id); null when nobody did" }),
  reason: z
    .string()
    .nullable()
    .meta({ description: 'The policy that decided this run or skip (e.g. `misfire:catch-up`, `overlap:skip`); null for a run on time' }),
});

export const AbortViewSchema = z.object({
  runId: z.string().nullable(),
  jobId: z.string(),
  leaseGeneration: z.number().int(),
  agentId: z.string().nullable(),
  requestedBy: z.string().nullable(),
  requestedAt: instant,
  stopSchedule: z.boolean(),
});

export const OccurrenceViewSchema = z.object({
  at: instant,
  local: z.string().meta({ description: "Local reading in the schedule's zone, YYYY-MM-DDTHH:mm:ss" }),
  offset: z.string().meta({ description: "The zone's UTC offset at that instant, e.g. +02:00" }),
  dst: enumOf(DST_MARKS).nullable(),
  scheduledLocal: z.string().nullable().meta({ description: 'gap-shifted only: the reading the expression asked for' }),
});

export const PreviewViewSchema = z.object({
  schedule: z.string().nullable(),
  timezone: z.string(),
  occurrences: z.array(OccurrenceViewSchema),
});

export const UpcomingViewSchema = PreviewViewSchema.extend({ jobId: z.string() });

export const BackfillViewSchema = z.object({
  jobId: z.string(),
  first: instant,
  last: instant,
  count: z.number().int(),
  resumeAt: instant.meta({ description: 'The regular occurrence the job resumes from afterwards' }),
});

export const TokenViewSchema = z.object({
  id: z.string().meta({ format: 'uuid' }),
  namespace: z.string(),
  role: enumOf(TOKEN_ROLES),
  name: z.string().nullable(),
  createdAt: instant,
  expiresAt: nullableInstant,
  revokedAt: nullableInstant,
});

export const WebhookViewSchema = z.object({
  id: z.string().meta({ format: 'uuid' }),
  namespace: z.string(),
  url: z.string(),
  events: z.array(enumOf(WEBHOOK_EVENTS)),
  jobId: z.string().nullable().meta({ format: 'uuid', description: "Only this job's events; null: every job of the namespace" }),
  description: z.string().nullable(),
  createdAt: instant,
});

export const DeliveryViewSchema = z.object({
  id: z.string().meta({ description: 'Delivery id (also in the Kairos-Delivery header and the body): deduplicate on it' }),
  webhookId: z.string().meta({ format: 'uuid' }),
  event: enumOf(WEBHOOK_EVENTS),
  jobId: z.string().meta({ format: 'uuid' }),
  runId: z.string().nullable(),
  state: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.number().int(),
  nextAttemptAt: nullableInstant.meta({ description: 'When a pending delivery is tried next' }),
  lastStatus: z.number().int().nullable().meta({ description: 'HTTP status of the last attempt; null when it got no answer' }),
  lastError: z.string().nullable(),
  createdAt: instant,
  deliveredAt: nullableInstant,
  body: z.record(z.string(), z.unknown()).meta({ description: 'The event as sent (deliveryId added)' }),
});

export const AgentViewSchema = z.object({
  agentId: z.string(),
  namespace: z.string(),
  quarantinedUntil: nullableInstant,
  probation: z.boolean(),
  tasks: z.array(z.string()),
  capacity: z.number().int(),
  inFlight: z.number().int(),
  draining: z.boolean(),
  version: z.string(),
  connectedAt: instant,
  lastHeartbeatAt: nullableInstant,
  coordinatorId: z.string(),
});

export const WhoamiViewSchema = z.object({
  namespace: z.string(),
  role: enumOf<(typeof TOKEN_ROLES)[number] | 'anonymous'>([...TOKEN_ROLES, 'anonymous']).meta({ description: 'The token\'s role; `anonymous` only on an --insecure coordinator called without a token' }),
  tokenName: z.string().nullable(),
  tokenId: z.string().nullable().meta({ description: 'The token\'s id; null for the anonymous caller' }),
});

const ErrorDetailSchema = z.object({
  code: z.string().meta({ description: 'The error kind, e.g. invalid_argument, not_found, failed_precondition' }),
  reason: z.string().meta({ description: 'Stable UPPER_SNAKE_CASE reason to branch on, e.g. JOB_CLAIMED' }),
  message: z.string(),
  field: z.string().optional().meta({ description: 'The request field at fault (dotted path)' }),
  details: z.record(z.string(), z.unknown()).optional(),
});

const cursor = z.string().nullable().meta({ description: 'Pass back as `cursor` for the next page; null on the last page' });

/** The responses, by the name the OpenAPI document gives them. */
export const RESPONSE_SCHEMAS = {
  Job: JobViewSchema,
  Run: RunViewSchema,
  JobPage: z.object({ jobs: z.array(JobViewSchema), nextCursor: cursor }),
  RunPage: z.object({ runs: z.array(RunViewSchema), nextCursor: cursor }),
  JobCreated: z.object({
    jobId: z.string().meta({ format: 'uuid' }),
    created: z.boolean().meta({ description: 'false: the idempotency key was used before with the same request, and this is that job' }),
    job: JobViewSchema,
  }),
  JobUpdated: z.object({ job: JobViewSchema, appliesFrom: z.enum(['now', 'next-claim']) }),
  Abort: AbortViewSchema,
  Preview: PreviewViewSchema,
  Upcoming: UpcomingViewSchema,
  Backfill: BackfillViewSchema,
  BackfillCancelled: z.object({ finishing: z.boolean() }),
  Agent: AgentViewSchema,
  Whoami: WhoamiViewSchema,
  Token: TokenViewSchema,
  TokenCreated: z.object({ id: z.string().meta({ format: 'uuid' }), secret: z.string().meta({ description: 'Shown once' }), token: TokenViewSchema }),
  TokenList: z.object({ tokens: z.array(TokenViewSchema) }),
  Webhook: WebhookViewSchema,
  WebhookCreated: z.object({ webhook: WebhookViewSchema, secret: z.string().meta({ description: 'The HMAC-SHA256 signing key; shown once' }) }),
  WebhookList: z.object({ webhooks: z.array(WebhookViewSchema) }),
  DeliveryList: z.object({ deliveries: z.array(DeliveryViewSchema), nextCursor: z.string().nullable() }),
  Health: z.object({ status: z.string() }),
  JobsCreated: z.object({
    results: z.array(
      z.object({
        index: z.number().int().meta({ description: 'The position of the item in the request' }),
        status: z.number().int().meta({ description: 'What POST /jobs would have answered for this item alone: 201, 200 (idempotent repeat), 400, 409...' }),
        jobId: z.string().nullable().meta({ format: 'uuid', description: 'The job made (201) or found by its idempotency key (200); null when refused' }),
        created: z.boolean(),
        error: ErrorDetailSchema.nullable().meta({ description: 'Why the item was refused (field names a field of the item); null otherwise' }),
      }),
    ),
  }),
  Error: z.object({ error: ErrorDetailSchema }),
} as const;

export type JobView = z.infer<typeof JobViewSchema>;
export type RunView = z.infer<typeof RunViewSchema>;
export type AbortView = z.infer<typeof AbortViewSchema>;
export type OccurrenceView = z.infer<typeof OccurrenceViewSchema>;
export type PreviewView = z.infer<typeof PreviewViewSchema>;
export type BackfillView = z.infer<typeof BackfillViewSchema>;
export type TokenView = z.infer<typeof TokenViewSchema>;
export type WebhookView = z.infer<typeof WebhookViewSchema>;
export type DeliveryView = z.infer<typeof DeliveryViewSchema>;
export type AgentView = z.infer<typeof AgentViewSchema>;
export type WhoamiView = z.infer<typeof WhoamiViewSchema>;
