/**
 * createKairosClient: a promise-based JobService client.
 *
 * One grpc-js channel per client (created lazily by grpc-js on the first call,
 * with the shared KAIROS_CHANNEL_OPTIONS). Each call carries the bearer token,
 * if any, as `authorization` metadata and its own deadline. Every rejection is
 * a KairosError; requests the client can tell are invalid are refused before
 * anything is sent.
 *
 * Calls are not retried: CreateJob is safe to repeat only with an
 * idempotencyKey, and the caller knows whether it gave one.
 */
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Metadata, type CallOptions, type ServiceError } from '@grpc/grpc-js';
import {
  type AbortRunResponse,
  createGrpcClient,
  JobService,
  TokenService,
  WebhookService,
  type CancelJobResponse,
  type CreateJobResponse,
  type CreateJobsResponse,
  type CreateJobRequest,
  type CreateTokenResponse,
  type CreateWebhookResponse,
  type GetJobResponse,
  type ListAgentsResponse,
  type ListUpcomingResponse,
  type PreviewScheduleResponse,
  type ListJobsResponse,
  type ListRunsResponse,
  type ListTokensResponse,
  type ListWebhookDeliveriesResponse,
  type ListWebhooksResponse,
  type PauseJobResponse,
  type ResumeJobResponse,
  type RevokeTokenResponse,
  type WhoamiResponse,
  type TriggerJobResponse,
  type UpdateJobResponse,
  type StartBackfillResponse,
  type CancelBackfillResponse,
  EditApplies,
} from '@kairos/proto';
import { agentFromWire, type Agent } from './agents';
import { channelCredentials, type TlsOptions } from './credentials';
import { errorFromStatus, KairosError, KairosErrorCode } from './error';
import {
  createJobRequest,
  jobFromWire,
  listJobsFilter,
  requiredJob,
  type AbortedRun,
  type AbortRunOptions,
  type CreateJobInput,
  type CreateJobResult,
  type CreateJobsItem,
  MAX_BATCH_JOBS,
  type Job,
  type JobPage,
  type ListJobsOptions,
  type UpdateJobInput,
  type UpdateJobResult,
  type StartedBackfill,
  instant,
  uint32,
  updateJobRequest,
} from './jobs';
import { runFromWire, type ListRunsOptions, type RunPage } from './runs';
import { previewFromWire, previewRequest, type PreviewScheduleInput, type SchedulePreview } from './schedules';
import { createTokenRequest, tokenFromWire, type CreatedToken, type CreateTokenInput, type Token, type Whoami } from './tokens';
import { deliveryFromWire, webhookFromWire, type CreatedWebhook, type CreateWebhookInput, type Webhook, type WebhookDeliveryPage } from './webhooks';
import { counter, dateOrNull, textOrNull } from './wire-values';

export interface KairosClientOptions {
  /** Coordinator gRPC address, `host:port` (e.g. `127.0.0.1:50051`). */
  address: string;
  /** Bearer token, sent as `authorization: Bearer <token>`. */
  token?: string | undefined;
  /** TLS material; `false` or unset for plaintext. */
  tls?: TlsOptions | false | undefined;
  /** Deadline of each call, from its start; default 10000. */
  deadlineMs?: number | undefined;
}

export interface KairosClient {
  /** Schedules a job. At-least-once: its handler must be idempotent. */
  createJob(input: CreateJobInput): Promise<CreateJobResult>;
  /**
   * Schedules 1 to MAX_BATCH_JOBS jobs in one call and one transaction. Each
   * item is answered on its own, in order: an item this client or the
   * coordinator refuses carries its KairosError and does not stop the others.
   * Throws only when the call as a whole fails (size, credentials, transport).
   */
  createJobs(inputs: readonly CreateJobInput[]): Promise<CreateJobsItem[]>;
  getJob(jobId: string): Promise<Job>;
  /** One page of jobs, oldest first. */
  listJobs(options?: ListJobsOptions): Promise<JobPage>;
  /**
   * Changes a job in place (history stays on its id). With `expectedVersion`
   * (Job.version) the change applies only if nobody changed the job since:
   * `aborted` otherwise. A running job's change applies from its next claim.
   */
  updateJob(jobId: string, changes: UpdateJobInput, options?: { expectedVersion?: number }): Promise<UpdateJobResult>;
  /**
   * Runs a recurring job's occurrences in [from, to) (a past range) in order,
   * one at a time; then the schedule resumes. `failed-precondition` unless the
   * job is DUE with no backfill running.
   */
  startBackfill(jobId: string, range: { from: Date | string; to: Date | string }): Promise<StartedBackfill>;
  /** Stops a backfill; `finishing` when a backfill run still runs to its end first. */
  cancelBackfill(jobId: string): Promise<{ finishing: boolean }>;
  /** Cancels a DUE or PAUSED job (again: no-op); `failed-precondition` when CLAIMED (use abortRun) or finished. */
  cancelJob(jobId: string): Promise<void>;
  /**
   * Stops the run of a CLAIMED job: answers once the agent has been asked;
   * the run then ends CANCELLED (follow it in listRuns). One-off jobs end
   * CANCELLED; recurring ones go on to their next occurrence unless
   * `stopSchedule`. `failed-precondition` when nothing is running.
   */
  abortRun(jobId: string, options?: AbortRunOptions): Promise<AbortedRun>;
  /** DUE → PAUSED; returns the job after the call. */
  pauseJob(jobId: string): Promise<Job>;
  /** PAUSED → DUE (missed occurrences follow the misfire policy); returns the job. */
  resumeJob(jobId: string): Promise<Job>;
  /** Makes a DUE or DEAD job due now, once; returns the job. */
  triggerJob(jobId: string): Promise<Job>;
  /** One page of a job's runs, oldest first. */
  listRuns(jobId: string, options?: ListRunsOptions): Promise<RunPage>;
  /** The next occurrences of a cron schedule, marked where DST moved them (nothing is created). */
  previewSchedule(input: PreviewScheduleInput): Promise<SchedulePreview>;
  /** A job's next occurrences, starting with the one it waits to serve. */
  listUpcoming(jobId: string, options?: { count?: number }): Promise<SchedulePreview>;
  /** Agents connected to the coordinators, by agentId. */
  listAgents(): Promise<Agent[]>;
  /** Creates a token in the caller's namespace (admin token); the secret is returned once. */
  createToken(input: CreateTokenInput): Promise<CreatedToken>;
  /** The namespace's tokens, never their secrets (admin token). */
  listTokens(): Promise<Token[]>;
  /** Revokes a token of the namespace (admin token); `not-found` for any other. */
  revokeToken(tokenId: string): Promise<void>;
  /** The caller's own token: namespace, role (`anonymous` on an insecure coordinator without one), name and id. */
  whoami(): Promise<Whoami>;
  /** Creates a webhook in the caller's namespace (admin token); its signing secret is returned once. */
  createWebhook(input: CreateWebhookInput): Promise<CreatedWebhook>;
  /** The namespace's webhooks, never their secrets (admin token). */
  listWebhooks(): Promise<Webhook[]>;
  /** Deletes a webhook and its deliveries (admin token). */
  deleteWebhook(webhookId: string): Promise<void>;
  /** A webhook's deliveries, newest first (admin token); `cursor` is the previous page's `nextCursor`. */
  listWebhookDeliveries(webhookId: string, options?: { limit?: number; cursor?: string }): Promise<WebhookDeliveryPage>;
  /** Closes the channel; calls made afterwards fail. */
  close(): void;
}

export const DEFAULT_DEADLINE_MS = 10_000;

type Callback<O> = (error: ServiceError | null, response?: O) => void;
type Start<O> = (metadata: Metadata, options: Partial<CallOptions>, callback: Callback<O>) => void;

export function createKairosClient(options: KairosClientOptions): KairosClient {
  if (typeof options.address !== 'string' || options.address === '') {
    throw new KairosError(KairosErrorCode.InvalidArgument, 'address is required (host:port)', { field: 'address' });
  }
  const deadlineMs = options.deadlineMs ?? DEFAULT_DEADLINE_MS;
  if (!(deadlineMs > 0)) {
    throw new KairosError(KairosErrorCode.InvalidArgument, 'deadlineMs must be positive', { field: 'deadlineMs' });
  }
  const credentials = channelCredentials(options.tls);
  const grpcClient = createGrpcClient(JobService, options.address, credentials);
  const tokenClient = createGrpcClient(TokenService, options.address, credentials);
  const webhookClient = createGrpcClient(WebhookService, options.address, credentials);
  const token = options.token === undefined || options.token === '' ? undefined : options.token;

  /** Runs one unary call with fresh metadata and deadline; settles with a KairosError on failure. */
  async function unary<O>(call: string, start: Start<O>): Promise<O> {
    const metadata = new Metadata();
    if (token !== undefined) metadata.set('authorization', `Bearer ${token}`);
    try {
      return await new Promise<O>((resolve, reject) => {
        start(metadata, { deadline: Date.now() + deadlineMs }, (error, response) => {
          if (error) reject(error);
          else if (response === undefined) reject(new KairosError(KairosErrorCode.Internal, `${call}: empty response`));
          else resolve(response);
        });
      });
    } catch (error: unknown) {
      throw KairosError.from(error);
    }
  }

  return {
    async createJob(input) {
      const request = createJobRequest(input);
      const response = await unary<CreateJobResponse>('CreateJob', (md, opts, cb) => grpcClient.createJob(request, md, opts, cb));
      return { jobId: response.jobId, created: response.created, job: requiredJob(response.job, 'CreateJob') };
    },
    async createJobs(inputs) {
      if (!Array.isArray(inputs) || inputs.length === 0 || inputs.length > MAX_BATCH_JOBS) {
        throw new KairosError(KairosErrorCode.InvalidArgument, `createJobs takes 1 to ${MAX_BATCH_JOBS} jobs`, { field: 'jobs' });
      }
      const answers: Array<CreateJobsItem | undefined> = inputs.map(() => undefined);
      const sent: Array<{ index: number; request: CreateJobRequest }> = [];
      for (const [index, input] of inputs.entries()) {
        try {
          sent.push({ index, request: createJobRequest(input) });
        } catch (error: unknown) {
          answers[index] = { jobId: null, created: false, error: KairosError.from(error) };
        }
      }
      if (sent.length > 0) {
        const request = { jobs: sent.map((item) => item.request) };
        const response = await unary<CreateJobsResponse>('CreateJobs', (md, opts, cb) => grpcClient.createJobs(request, md, opts, cb));
        if (response.results.length !== sent.length) {
          throw new KairosError(KairosErrorCode.Internal, `CreateJobs: ${response.results.length} results for ${sent.length} jobs`);
        }
        for (const [position, result] of response.results.entries()) {
          answers[sent[position]!.index] =
            result.error === undefined
              ? { jobId: result.jobId, created: result.created, error: null }
              : { jobId: null, created: false, error: errorFromStatus(result.error) };
        }
      }
      return answers.map((answer) => answer!);
    },
    async getJob(jobId) {
      const request = { jobId: requireJobId(jobId) };
      const response = await unary<GetJobResponse>('GetJob', (md, opts, cb) => grpcClient.getJob(request, md, opts, cb));
      return requiredJob(response.job, 'GetJob');
    },
    async listJobs(listOptions = {}) {
      const request = listJobsFilter(listOptions);
      const response = await unary<ListJobsResponse>('ListJobs', (md, opts, cb) => grpcClient.listJobs(request, md, opts, cb));
      return { jobs: response.jobs.map(jobFromWire), nextCursor: textOrNull(response.nextCursor) };
    },
    async cancelJob(jobId) {
      const request = { jobId: requireJobId(jobId) };
      await unary<CancelJobResponse>('CancelJob', (md, opts, cb) => grpcClient.cancelJob(request, md, opts, cb));
    },
    async updateJob(jobId, changes, updateOptions = {}) {
      const request = updateJobRequest(requireJobId(jobId), changes, updateOptions.expectedVersion);
      const response = await unary<UpdateJobResponse>('UpdateJob', (md, opts, cb) => grpcClient.updateJob(request, md, opts, cb));
      return { job: requiredJob(response.job, 'UpdateJob'), appliesFrom: response.applies === EditApplies.NEXT_CLAIM ? 'next-claim' : 'now' };
    },
    async startBackfill(jobId, range) {
      if (typeof range !== 'object' || range === null) {
        throw new KairosError(KairosErrorCode.InvalidArgument, 'range must be {from, to}', { field: 'from' });
      }
      const request = {
        jobId: requireJobId(jobId),
        from: timestampFromDate(instant(range.from, 'from')),
        to: timestampFromDate(instant(range.to, 'to')),
      };
      const response = await unary<StartBackfillResponse>('StartBackfill', (md, opts, cb) => grpcClient.startBackfill(request, md, opts, cb));
      return { first: dateOrNull(response.first), last: dateOrNull(response.last), count: response.count, resumeAt: dateOrNull(response.resumeAt) };
    },
    async cancelBackfill(jobId) {
      const request = { jobId: requireJobId(jobId) };
      const response = await unary<CancelBackfillResponse>('CancelBackfill', (md, opts, cb) => grpcClient.cancelBackfill(request, md, opts, cb));
      return { finishing: response.finishing };
    },
    async abortRun(jobId, abortOptions = {}) {
      if (abortOptions.stopSchedule !== undefined && typeof abortOptions.stopSchedule !== 'boolean') {
        throw new KairosError(KairosErrorCode.InvalidArgument, 'stopSchedule must be a boolean', { field: 'stopSchedule' });
      }
      const request = { jobId: requireJobId(jobId), stopSchedule: abortOptions.stopSchedule ?? false };
      const response = await unary<AbortRunResponse>('AbortRun', (md, opts, cb) => grpcClient.abortRun(request, md, opts, cb));
      return {
        runId: response.runId,
        leaseGeneration: counter(response.leaseGeneration),
        agentId: textOrNull(response.agentId),
        requestedBy: textOrNull(response.requestedBy),
        stopSchedule: response.stopSchedule,
      };
    },
    async pauseJob(jobId) {
      const request = { jobId: requireJobId(jobId) };
      const response = await unary<PauseJobResponse>('PauseJob', (md, opts, cb) => grpcClient.pauseJob(request, md, opts, cb));
      return requiredJob(response.job, 'PauseJob');
    },
    async resumeJob(jobId) {
      const request = { jobId: requireJobId(jobId) };
      const response = await unary<ResumeJobResponse>('ResumeJob', (md, opts, cb) => grpcClient.resumeJob(request, md, opts, cb));
      return requiredJob(response.job, 'ResumeJob');
    },
    async triggerJob(jobId) {
      const request = { jobId: requireJobId(jobId) };
      const response = await unary<TriggerJobResponse>('TriggerJob', (md, opts, cb) => grpcClient.triggerJob(request, md, opts, cb));
      return requiredJob(response.job, 'TriggerJob');
    },
    async listRuns(jobId, listOptions = {}) {
      const request = { jobId: requireJobId(jobId), ...pageRequest(listOptions) };
      const response = await unary<ListRunsResponse>('ListRuns', (md, opts, cb) => grpcClient.listRuns(request, md, opts, cb));
      return { runs: response.runs.map(runFromWire), nextCursor: textOrNull(response.nextCursor) };
    },
    async previewSchedule(input) {
      const request = previewRequest(input);
      const response = await unary<PreviewScheduleResponse>('PreviewSchedule', (md, opts, cb) => grpcClient.previewSchedule(request, md, opts, cb));
      return previewFromWire(response);
    },
    async listUpcoming(jobId, upcomingOptions = {}) {
      const request = { jobId: requireJobId(jobId), count: uint32(upcomingOptions.count, 'count') };
      const response = await unary<ListUpcomingResponse>('ListUpcoming', (md, opts, cb) => grpcClient.listUpcoming(request, md, opts, cb));
      return previewFromWire(response);
    },
    async listAgents() {
      const response = await unary<ListAgentsResponse>('ListAgents', (md, opts, cb) => grpcClient.listAgents({}, md, opts, cb));
      return response.agents.map(agentFromWire);
    },
    async createToken(input) {
      const request = createTokenRequest(input);
      const response = await unary<CreateTokenResponse>('CreateToken', (md, opts, cb) => tokenClient.createToken(request, md, opts, cb));
      if (response.token === undefined) throw new KairosError(KairosErrorCode.Internal, 'CreateToken: response without a token');
      return { token: tokenFromWire(response.token), secret: response.secret };
    },
    async listTokens() {
      const response = await unary<ListTokensResponse>('ListTokens', (md, opts, cb) => tokenClient.listTokens({}, md, opts, cb));
      return response.tokens.map(tokenFromWire);
    },
    async revokeToken(tokenId) {
      if (typeof tokenId !== 'string' || tokenId === '') {
        throw new KairosError(KairosErrorCode.InvalidArgument, 'tokenId is required', { field: 'tokenId' });
      }
      await unary<RevokeTokenResponse>('RevokeToken', (md, opts, cb) => tokenClient.revokeToken({ tokenId }, md, opts, cb));
    },
    async whoami() {
      const response = await unary<WhoamiResponse>('Whoami', (md, opts, cb) => tokenClient.whoami({}, md, opts, cb));
      return { namespace: response.namespace, role: response.role as Whoami['role'], tokenName: textOrNull(response.tokenName), tokenId: textOrNull(response.tokenId) };
    },
    async createWebhook(input) {
      const request = { url: input.url, events: input.events ?? [], jobId: input.jobId ?? '', description: input.description ?? '' };
      const response = await unary<CreateWebhookResponse>('CreateWebhook', (md, opts, cb) => webhookClient.createWebhook(request, md, opts, cb));
      if (response.webhook === undefined) throw new KairosError(KairosErrorCode.Internal, 'CreateWebhook: response without a webhook');
      return { webhook: webhookFromWire(response.webhook), secret: response.secret };
    },
    async listWebhooks() {
      const response = await unary<ListWebhooksResponse>('ListWebhooks', (md, opts, cb) => webhookClient.listWebhooks({}, md, opts, cb));
      return response.webhooks.map(webhookFromWire);
    },
    async deleteWebhook(webhookId) {
      const id = requireId(webhookId, 'webhookId');
      await unary('DeleteWebhook', (md, opts, cb) => webhookClient.deleteWebhook({ webhookId: id }, md, opts, cb));
    },
    async listWebhookDeliveries(webhookId, page = {}) {
      const request = { webhookId: requireId(webhookId, 'webhookId'), limit: page.limit ?? 0, cursor: page.cursor ?? '' };
      const response = await unary<ListWebhookDeliveriesResponse>('ListWebhookDeliveries', (md, opts, cb) => webhookClient.listWebhookDeliveries(request, md, opts, cb));
      return { deliveries: response.deliveries.map(deliveryFromWire), nextCursor: textOrNull(response.nextCursor) };
    },
    close() {
      grpcClient.close();
      tokenClient.close();
      webhookClient.close();
    },
  };
}

function requireId(id: string, field: string): string {
  if (typeof id !== 'string' || id === '') throw new KairosError(KairosErrorCode.InvalidArgument, `${field} is required`, { field });
  return id;
}

function requireJobId(jobId: string): string {
  if (typeof jobId !== 'string' || jobId === '') {
    throw new KairosError(KairosErrorCode.InvalidArgument, 'jobId is required', { field: 'jobId' });
  }
  return jobId;
}

function pageRequest(options: ListRunsOptions): { limit: number; cursor: string } {
  const limit = options.limit ?? 0;
  if (!Number.isInteger(limit) || limit < 0 || limit > 0xffff_ffff) {
    throw new KairosError(KairosErrorCode.InvalidArgument, `limit must be a whole number ≥ 0, got ${limit}`, {
      field: 'limit',
    });
  }
  return { limit, cursor: options.cursor ?? '' };
}
