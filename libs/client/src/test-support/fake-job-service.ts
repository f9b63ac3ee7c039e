/**
 * A JobService on real loopback gRPC for tests: grpc-js server on 127.0.0.1:0,
 * one scripted handler per method, every request recorded with its metadata.
 *
 * Test-only (excluded from the build by tsconfig). Handlers return a response
 * (init objects are fine) or throw `grpcError(...)` to answer with a status.
 */
import type { MessageInitShape } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import {
  addGrpcService,
  DstMark,
  EditApplies,
  JobService,
  JobState,
  MisfirePolicy,
  RunOutcome,
  type GrpcServiceImplementation,
  type JobSchema,
  type RequestOf,
  type ServiceMethods,
} from '@kairos/proto';

type Methods = ServiceMethods<typeof JobService>;
type MethodName = keyof Methods & string;

export type FakeHandler<K extends MethodName> = (
  request: RequestOf<Methods[K]>,
  metadata: grpc.Metadata,
) => MessageInitShape<Methods[K]['output']> | Promise<MessageInitShape<Methods[K]['output']>>;

export type FakeHandlers = { [K in MethodName]?: FakeHandler<K> };

export interface RecordedCall {
  method: MethodName;
  request: unknown;
  metadata: grpc.Metadata;
}

export interface FakeJobService {
  /** `127.0.0.1:<port>` */
  readonly address: string;
  /** Every request received, in arrival order. */
  readonly calls: RecordedCall[];
  /** Replace handlers while running. */
  handle(handlers: FakeHandlers): void;
  /** The last request of a method (throws if there was none). */
  lastRequest<K extends MethodName>(method: K): RequestOf<Methods[K]>;
  stop(): Promise<void>;
}

/** An error the fake answers with: a gRPC status, details, and optionally the `kairos-field` trailer. */
export function grpcError(code: grpc.status, details: string, field?: string): Error {
  const metadata = new grpc.Metadata();
  if (field !== undefined) metadata.set('kairos-field', field);
  return Object.assign(new Error(details), { code, details, metadata });
}

export const SAMPLE_JOB_ID = '0190c7a2-6c1e-7b8e-9d3a-3f4e5a6b7c8d';

/** A complete job message, as a coordinator would return it. */
export function sampleJob(overrides: Partial<MessageInitShape<typeof JobSchema>> = {}): MessageInitShape<typeof JobSchema> {
  const defaults: MessageInitShape<typeof JobSchema> = {
    id: SAMPLE_JOB_ID,
    namespace: 'default',
    name: 'nightly report',
    task: 'http',
    when: { case: 'schedule', value: '0 3 * * *' },
    timezone: 'Europe/Berlin',
    payload: { url: 'https://example.test/report', method: 'POST' },
    state: JobState.DUE,
    nextRunAt: timestampFromDate(new Date('2030-01-02T02:00:00Z')),
    attempt: 1,
    maxAttempts: 3,
    timeoutSeconds: 60,
    misfirePolicy: MisfirePolicy.SKIP,
    idempotencyKey: 'report-1',
    leaseGeneration: 7n,
    retry: { initialIntervalMs: 500, maxIntervalMs: 60_000, multiplier: 3, jitter: 0.25 },
    jitterMs: 1500,
    pauseOnFailure: true,
    version: 4,
    createdAt: timestampFromDate(new Date('2030-01-01T00:00:00Z')),
    updatedAt: timestampFromDate(new Date('2030-01-01T00:00:05Z')),
  };
  // Partial<init> spreads into a valid init; TypeScript cannot see through the oneof.
  return { ...defaults, ...overrides } as MessageInitShape<typeof JobSchema>;
}

const DEFAULT_HANDLERS: { [K in MethodName]: FakeHandler<K> } = {
  createJob: () => ({ jobId: SAMPLE_JOB_ID, created: true, job: sampleJob({ id: SAMPLE_JOB_ID }) }),
  createJobs: (request) => ({ results: request.jobs.map((_job, i) => ({ jobId: `${SAMPLE_JOB_ID.slice(0, -4)}${String(i).padStart(4, '0')}`, created: true })) }),
  getJob: (request) => ({ job: sampleJob({ id: request.jobId }) }),
  listJobs: () => ({ jobs: [sampleJob()], nextCursor: '' }),
  cancelJob: () => ({}),
  updateJob: (request) => ({
    job: sampleJob({ id: request.jobId, name: request.name ?? 'nightly report', version: 5 }),
    applies: EditApplies.NEXT_CLAIM,
  }),
  startBackfill: (request) => ({ first: request.from, last: request.to, count: 3, resumeAt: timestampFromDate(new Date('2030-01-02T02:00:00Z')) }),
  cancelBackfill: () => ({ finishing: true }),
  previewSchedule: (request) => ({
    schedule: request.schedule,
    timezone: request.timezone || 'UTC',
    occurrences: [
      { at: timestampFromDate(new Date('2027-03-28T01:30:00Z')), local: '2027-03-28T03:30:00', offset: '+02:00', dst: DstMark.GAP_SHIFTED, scheduledLocal: '2027-03-28T02:30:00' },
      { at: timestampFromDate(new Date('2027-03-29T00:30:00Z')), local: '2027-03-29T02:30:00', offset: '+02:00', dst: DstMark.UNSPECIFIED, scheduledLocal: '' },
    ],
  }),
  listUpcoming: (request) => ({ jobId: request.jobId, schedule: '', timezone: 'UTC', occurrences: [] }),
  abortRun: (request) => ({
    runId: '42',
    leaseGeneration: 8n,
    agentId: 'agent-b',
    requestedBy: 'oncall (token t-1)',
    stopSchedule: request.stopSchedule,
  }),
  pauseJob: (request) => ({ job: sampleJob({ id: request.jobId, state: JobState.PAUSED }) }),
  resumeJob: (request) => ({ job: sampleJob({ id: request.jobId, state: JobState.DUE }) }),
  triggerJob: (request) => ({ job: sampleJob({ id: request.jobId, state: JobState.DUE }) }),
  listRuns: (request) => ({
    runs: [
      {
        runId: '41',
        jobId: request.jobId,
        attempt: 1,
        leaseGeneration: 7n,
        scheduledFor: timestampFromDate(new Date('2030-01-01T02:00:00Z')),
        startedAt: timestampFromDate(new Date('2030-01-01T02:00:01Z')),
        finishedAt: timestampFromDate(new Date('2030-01-01T02:00:03Z')),
        outcome: RunOutcome.FAILED,
        workerId: 'agent-a',
        error: 'HTTP 503',
      },
      {
        runId: '42',
        jobId: request.jobId,
        attempt: 2,
        leaseGeneration: 8n,
        scheduledFor: timestampFromDate(new Date('2030-01-01T02:00:00Z')),
        startedAt: timestampFromDate(new Date('2030-01-01T02:00:10Z')),
        outcome: RunOutcome.RUNNING,
        workerId: 'agent-b',
        reason: 'overlap:buffer-one',
      },
    ],
    nextCursor: '',
  }),
  listAgents: () => ({
    agents: [
      {
        agentId: 'agent-a',
        tasks: ['http', 'sleep'],
        capacity: 8,
        inFlight: 2,
        connectedAt: timestampFromDate(new Date('2030-01-01T00:00:00Z')),
        lastHeartbeatAt: timestampFromDate(new Date('2030-01-01T00:10:00Z')),
        draining: false,
        version: '0.1.0',
        coordinatorId: 'coord-1',
        namespace: 'default',
        probation: false,
      },
      {
        agentId: 'agent-b',
        tasks: ['sleep'],
        capacity: 10000,
        inFlight: 0,
        connectedAt: timestampFromDate(new Date('2030-01-01T00:00:00Z')),
        lastHeartbeatAt: timestampFromDate(new Date('2030-01-01T00:10:00Z')),
        draining: false,
        version: '0.1.0',
        coordinatorId: 'coord-1',
        namespace: 'default',
        quarantinedUntil: timestampFromDate(new Date('2030-01-01T00:10:30Z')),
        probation: false,
      },
    ],
  }),
};

export async function startFakeJobService(handlers: FakeHandlers = {}): Promise<FakeJobService> {
  const current: { [K in MethodName]: FakeHandler<K> } = { ...DEFAULT_HANDLERS, ...definedOnly(handlers) };
  const calls: RecordedCall[] = [];

  // Each RPC: record, run the scripted handler, answer with its value or its error.
  function unary<K extends MethodName>(method: K) {
    return (
      call: grpc.ServerUnaryCall<RequestOf<Methods[K]>, unknown>,
      callback: grpc.sendUnaryData<MessageInitShape<Methods[K]['output']>>,
    ): void => {
      calls.push({ method, request: call.request, metadata: call.metadata });
      const handler = current[method] as FakeHandler<K>;
      Promise.resolve()
        .then(() => handler(call.request, call.metadata))
        .then(
          (response) => callback(null, response),
          (error: unknown) => callback(error as grpc.ServiceError),
        );
    };
  }

  const implementation = {
    createJob: unary('createJob'),
    getJob: unary('getJob'),
    listJobs: unary('listJobs'),
    cancelJob: unary('cancelJob'),
    abortRun: unary('abortRun'),
    updateJob: unary('updateJob'),
    startBackfill: unary('startBackfill'),
    cancelBackfill: unary('cancelBackfill'),
    previewSchedule: unary('previewSchedule'),
    listUpcoming: unary('listUpcoming'),
    pauseJob: unary('pauseJob'),
    resumeJob: unary('resumeJob'),
    triggerJob: unary('triggerJob'),
    listRuns: unary('listRuns'),
    listAgents: unary('listAgents'),
  } as unknown as GrpcServiceImplementation<Methods>;

  const server = new grpc.Server();
  addGrpcService(server, JobService, implementation);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, boundPort) =>
      error ? reject(error) : resolve(boundPort),
    );
  });

  return {
    address: `127.0.0.1:${port}`,
    calls,
    handle(more) {
      Object.assign(current, definedOnly(more));
    },
    lastRequest(method) {
      const found = calls.filter((c) => c.method === method).at(-1);
      if (found === undefined) throw new Error(`the fake JobService received no ${method} call`);
      return found.request as RequestOf<Methods[typeof method]>;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => resolve());
      }),
  };
}

function definedOnly(handlers: FakeHandlers): FakeHandlers {
  return Object.fromEntries(Object.entries(handlers).filter(([, h]) => h !== undefined)) as FakeHandlers;
}
