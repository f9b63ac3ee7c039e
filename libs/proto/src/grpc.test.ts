/**
 * The grpc-js adapter over real loopback: a grpc-js server on 127.0.0.1:0 with
 * real handlers, and clients built from the same generated descriptors.
 */
import { create, fromBinary, isMessage, type MessageInitShape } from '@bufbuild/protobuf';
import { FileDescriptorProtoSchema, timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import {
  AgentService,
  CreateJobRequestSchema,
  JobService,
  JobState,
  LeaseLostReason,
  LeaseStatusSchema,
  MisfirePolicy,
  addGrpcService,
  createGrpcClient,
  fileDescriptorProtos,
  grpcServiceDefinition,
  type AgentMessage,
  type CoordinatorMessage,
  type CreateJobRequest,
  type CreateJobResponse,
  type GetJobResponse,
  type GrpcServiceImplementation,
  type ServiceMethods,
} from './index';

/** Binds a server with the given services to an ephemeral loopback port. */
async function startServer(register: (server: grpc.Server) => void): Promise<{ server: grpc.Server; address: string }> {
  const server = new grpc.Server();
  register(server);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, boundPort) =>
      error ? reject(error) : resolve(boundPort),
    );
  });
  return { server, address: `127.0.0.1:${port}` };
}

/** Graceful stop, forced after graceMs (tryShutdown alone waits for open streams forever). */
function stopServer(server: grpc.Server, graceMs = 2_000): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Promise form of a callback-style unary call. */
function unary<T>(invoke: (callback: grpc.requestCallback<T>) => unknown): Promise<T> {
  return new Promise((resolve, reject) => {
    invoke((error, value) => {
      if (error) reject(error);
      else if (value === undefined) reject(new Error('unary call returned no value'));
      else resolve(value);
    });
  });
}

describe('grpcServiceDefinition', () => {
  it('derives paths and stream flags from the descriptors', () => {
    const jobs = grpcServiceDefinition(JobService);
    expect(jobs.createJob.path).toBe('/kairos.v1.JobService/CreateJob');
    expect(jobs.listRuns.path).toBe('/kairos.v1.JobService/ListRuns');
    expect([jobs.createJob.requestStream, jobs.createJob.responseStream]).toEqual([false, false]);
    const agent = grpcServiceDefinition(AgentService);
    expect(agent.connect.path).toBe('/kairos.v1.AgentService/Connect');
    expect([agent.connect.requestStream, agent.connect.responseStream]).toEqual([true, true]);
    expect(grpcServiceDefinition(JobService)).toBe(jobs);
  });
});

describe('file descriptors', () => {
  it('lists imports before the Kairos files, each once', () => {
    const names = fileDescriptorProtos().map((bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name);
    expect(names).toEqual([
      'google/protobuf/struct.proto',
      'google/protobuf/any.proto',
      'google/rpc/status.proto',
      'google/protobuf/timestamp.proto',
      'kairos/v1/jobs.proto',
      'kairos/v1/agent.proto',
      'kairos/v1/tokens.proto',
      'kairos/v1/webhooks.proto',
    ]);
  });
});

describe('JobService over loopback', () => {
  const runAt = new Date('2030-01-02T03:04:05.678Z');
  const payload = {
    url: 'https://example.test/hook',
    method: 'POST',
    headers: { 'x-trace': 'abc' },
    body: { items: [1, 'two', true, null, { nested: 2.5 }] },
  };

  function setup() {
    const received: CreateJobRequest[] = [];
    const implementation: GrpcServiceImplementation<ServiceMethods<typeof JobService>> = {
      createJob(call, callback) {
        received.push(call.request);
        callback(null, { jobId: 'job-1', created: true });
      },
      createJobs(call, callback) {
        callback(null, { results: call.request.jobs.map(() => ({ jobId: 'job-1', created: false })) });
      },
      getJob(call, callback) {
        const request = received[0];
        if (request === undefined || call.request.jobId !== 'job-1') {
          callback({ code: grpc.status.NOT_FOUND, details: `job ${call.request.jobId} not found` });
          return;
        }
        callback(null, {
          job: {
            id: 'job-1',
            namespace: 'default',
            task: request.task,
            when: request.when,
            timezone: 'UTC',
            payload: request.payload,
            state: JobState.DUE,
            nextRunAt: request.when.case === 'runAt' ? request.when.value : undefined,
            maxAttempts: 3,
            misfirePolicy: MisfirePolicy.FIRE_ONCE,
            leaseGeneration: 2n ** 60n + 1n,
          },
        });
      },
      cancelJob(_call, callback) {
        callback({ code: grpc.status.FAILED_PRECONDITION, details: 'job is claimed' });
      },
      listJobs: (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED }),
      abortRun: (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED }),
      updateJob: (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED }),
      startBackfill: (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED }),
      cancelBackfill: (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED }),
      previewSchedule: (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED }),
      listUpcoming: (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED }),
      pauseJob: (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED }),
      resumeJob: (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED }),
      triggerJob: (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED }),
      listRuns: (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED }),
      listAgents: (_call, callback) => callback({ code: grpc.status.UNIMPLEMENTED }),
    };
    return { received, implementation };
  }

  const state = setup();
  let server: grpc.Server;
  let client: ReturnType<typeof createGrpcClient<ServiceMethods<typeof JobService>>>;

  beforeAll(async () => {
    const started = await startServer((s) => addGrpcService(s, JobService, state.implementation));
    server = started.server;
    client = createGrpcClient(JobService, started.address, grpc.credentials.createInsecure());
  });

  afterAll(async () => {
    client.close();
    await stopServer(server);
  });

  it('round-trips a Struct payload, a Timestamp and a uint64', async () => {
    const created = await unary<CreateJobResponse>((cb) =>
      client.createJob(
        {
          when: { case: 'runAt', value: timestampFromDate(runAt) },
          task: 'http',
          payload,
          idempotencyKey: 'key-1',
        },
        cb,
      ),
    );
    expect(created).toMatchObject({ jobId: 'job-1', created: true });

    const request = state.received[0];
    expect(request).toBeDefined();
    expect(isMessage(request, CreateJobRequestSchema)).toBe(true);
    expect(request?.payload).toEqual(payload);
    expect(request?.when.case).toBe('runAt');
    expect(request?.idempotencyKey).toBe('key-1');

    const { job } = await unary<GetJobResponse>((cb) => client.getJob({ jobId: 'job-1' }, cb));
    expect(job?.payload).toEqual(payload);
    expect(job?.when.case).toBe('runAt');
    if (job?.when.case !== 'runAt' || job.nextRunAt === undefined) throw new Error('runAt expected');
    expect(timestampDate(job.when.value)).toEqual(runAt);
    expect(timestampDate(job.nextRunAt)).toEqual(runAt);
    expect(job.state).toBe(JobState.DUE);
    expect(job.leaseGeneration).toBe(2n ** 60n + 1n);
  });

  it('accepts a complete message as well as an init object', async () => {
    const request = create(CreateJobRequestSchema, { when: { case: 'schedule', value: '*/5 * * * *' }, task: 'sleep' });
    const created = await unary<CreateJobResponse>((cb) => client.createJob(request, cb));
    expect(created.jobId).toBe('job-1');
    expect(state.received.at(-1)?.when).toEqual({ case: 'schedule', value: '*/5 * * * *' });
  });

  it('propagates an error status code and message', async () => {
    const error = await unary((cb) => client.cancelJob({ jobId: 'job-1' }, cb)).then(
      () => {
        throw new Error('expected CancelJob to fail');
      },
      (e: unknown) => e as grpc.ServiceError,
    );
    expect(error.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(error.details).toBe('job is claimed');

    const missing = await unary((cb) => client.getJob({ jobId: 'nope' }, cb)).catch((e: unknown) => e as grpc.ServiceError);
    expect(missing).toMatchObject({ code: grpc.status.NOT_FOUND, details: 'job nope not found' });
  });
});

describe('AgentService.Connect over loopback', () => {
  const implementation: GrpcServiceImplementation<ServiceMethods<typeof AgentService>> = {
    connect(call) {
      call.on('data', (message: AgentMessage) => {
        switch (message.kind.case) {
          case 'hello':
            call.write({
              kind: {
                case: 'welcome',
                value: { coordinatorId: `coordinator-for-${message.kind.value.agentId}`, leaseMs: 9_000, heartbeatIntervalMs: 3_000 },
              },
            });
            return;
          case 'heartbeat': {
            // Even generations are still held, odd ones were taken over by a newer claim.
            const statuses = message.kind.value.leases.map(
              (lease): MessageInitShape<typeof LeaseStatusSchema> => ({
                jobId: lease.jobId,
                leaseGeneration: lease.leaseGeneration,
                state:
                  lease.leaseGeneration % 2n === 0n
                    ? { case: 'remainingMs', value: 8_500 }
                    : { case: 'lost', value: { reason: LeaseLostReason.STALE_GENERATION } },
              }),
            );
            call.write({ kind: { case: 'renewReply', value: { seq: message.kind.value.seq, statuses } } });
            return;
          }
          default:
            call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: `unexpected ${message.kind.case}` });
        }
      });
      call.on('end', () => call.end());
    },
  };

  let server: grpc.Server;
  let client: ReturnType<typeof createGrpcClient<ServiceMethods<typeof AgentService>>>;

  beforeAll(async () => {
    const started = await startServer((s) => addGrpcService(s, AgentService, implementation));
    server = started.server;
    client = createGrpcClient(AgentService, started.address, grpc.credentials.createInsecure());
  });

  afterAll(async () => {
    client.close();
    await stopServer(server);
  });

  it('exchanges Hello/Welcome and a batched Heartbeat/RenewReply', async () => {
    const stream = client.connect();
    const replies: AsyncIterator<CoordinatorMessage> = stream[Symbol.asyncIterator]();
    const next = async (): Promise<CoordinatorMessage> => {
      const result = await replies.next();
      if (result.done === true) throw new Error('stream ended early');
      return result.value;
    };

    stream.write({ kind: { case: 'hello', value: { agentId: 'agent-7', tasks: ['http', 'sleep'], capacity: 8, version: '0.1.0' } } });
    const welcome = await next();
    expect(welcome.kind).toMatchObject({
      case: 'welcome',
      value: { coordinatorId: 'coordinator-for-agent-7', leaseMs: 9_000, heartbeatIntervalMs: 3_000 },
    });

    const leases = [1n, 2n, 3n, 4n, 10n].map((generation) => ({ jobId: `job-${generation}`, leaseGeneration: generation }));
    stream.write({ kind: { case: 'heartbeat', value: { seq: 1n, leases } } });
    const reply = await next();
    if (reply.kind.case !== 'renewReply') throw new Error(`renewReply expected, got ${reply.kind.case}`);
    expect(reply.kind.value.seq).toBe(1n);
    const byJob = new Map(reply.kind.value.statuses.map((status) => [status.jobId, status]));
    expect(byJob.size).toBe(5);
    expect(byJob.get('job-2')?.state).toEqual({ case: 'remainingMs', value: 8_500 });
    expect(byJob.get('job-10')?.leaseGeneration).toBe(10n);
    const lost = byJob.get('job-3')?.state;
    if (lost?.case !== 'lost') throw new Error('job-3 should be lost');
    expect(lost.value.reason).toBe(LeaseLostReason.STALE_GENERATION);

    stream.end();
    expect((await replies.next()).done).toBe(true);
  });
});
