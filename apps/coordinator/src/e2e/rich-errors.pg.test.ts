/**
 * The gRPC rich error model against a live coordinator: every failure carries
 * a google.rpc.Status in `grpc-status-details-bin` with an ErrorInfo (stable
 * reason, domain kairos.dev), a BadRequest with the proto field path for bad
 * input, and a kairos.v1.ClaimedJob for a claimed job; REST bodies carry the
 * same reason. Read both raw (as Go's status.Details or Python's rpc_status
 * would) and through libs/client.
 */
import { fromBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import { createKairosClient, KairosError, type KairosClient } from '@kairos/client';
import {
  BadRequestSchema,
  ClaimedJobSchema,
  createGrpcClient,
  ErrorInfoSchema,
  JobService,
  RpcStatusSchema,
  STATUS_DETAILS_KEY,
} from '@kairos/proto';
import {
  createTestDatabase,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type TestDatabase,
} from '@kairos/testing';

describe('rich errors, end to end', () => {
  let db: TestDatabase;
  let api: ReturnType<typeof restClient>;
  let client: KairosClient;
  let raw: ReturnType<typeof createGrpcClient<typeof JobService.method>>;

  beforeAll(async () => {
    db = await createTestDatabase();
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url });
    api = restClient(coordinator.httpUrl);
    client = createKairosClient({ address: coordinator.grpcAddress });
    raw = createGrpcClient(JobService, coordinator.grpcAddress, grpc.credentials.createInsecure());
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'worker', tasks: 'sleep' });
  });
  afterAll(async () => {
    client?.close();
    raw?.close();
    await stopAll();
    await db?.drop();
  });

  /** The google.rpc.Status of a failed raw call. */
  function statusOf(error: grpc.ServiceError) {
    const bytes = error.metadata.get(STATUS_DETAILS_KEY)[0];
    if (!(bytes instanceof Uint8Array)) throw new Error('no grpc-status-details-bin');
    return fromBinary(RpcStatusSchema, bytes);
  }
  const failed = <T>(start: (callback: (error: grpc.ServiceError | null) => void) => T) =>
    new Promise<grpc.ServiceError>((resolve, reject) => {
      start((error) => (error ? resolve(error) : reject(new Error('the call succeeded'))));
    });

  it('invalid input: BadRequest with the proto field path, ErrorInfo INVALID_ARGUMENT, the old trailer kept', async () => {
    const error = await failed((cb) =>
      raw.createJob({ task: 'sleep', when: { case: 'runAt', value: { seconds: -5n, nanos: 0 } } }, (e) => cb(e)),
    );
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    const status = statusOf(error);
    expect(status.code).toBe(grpc.status.INVALID_ARGUMENT);
    const info = status.details.map((d) => anyUnpack(d, ErrorInfoSchema)).find(Boolean);
    expect(info).toMatchObject({ reason: 'INVALID_ARGUMENT', domain: 'kairos.dev' });
    const badRequest = status.details.map((d) => anyUnpack(d, BadRequestSchema)).find(Boolean);
    expect(badRequest?.fieldViolations).toEqual([expect.objectContaining({ field: 'run_at', description: expect.stringContaining('runAt') })]);
    expect(error.metadata.get('kairos-field')).toEqual(['runAt']);
    const nested = await failed((cb) => raw.createJob({ task: 'sleep', when: { case: 'schedule', value: '0 * * * *' }, retry: { multiplier: 0.5 } }, (e) => cb(e)));
    expect(statusOf(nested).details.map((d) => anyUnpack(d, BadRequestSchema)).find(Boolean)?.fieldViolations[0]?.field).toBe('retry.multiplier');
  });

  it('a claimed job: JOB_CLAIMED with the run, agent and fencing token as structured details, on both transports', async () => {
    const { jobId } = await client.createJob({ task: 'sleep', runAt: new Date(), payload: { seconds: 30 } });
    const job = await waitFor(
      async () => {
        const current = await client.getJob(jobId);
        return current.state === 'CLAIMED' ? current : undefined;
      },
      { description: 'claimed' },
    );
    const error = await failed((cb) => raw.cancelJob({ jobId }, (e) => cb(e)));
    const status = statusOf(error);
    expect(status.details.map((d) => anyUnpack(d, ErrorInfoSchema)).find(Boolean)).toMatchObject({
      reason: 'JOB_CLAIMED',
      metadata: { state: 'CLAIMED', leaseOwner: 'worker', leaseGeneration: String(job.leaseGeneration) },
    });
    const claimed = status.details.map((d) => anyUnpack(d, ClaimedJobSchema)).find(Boolean);
    expect(claimed).toMatchObject({ agentId: 'worker', leaseGeneration: BigInt(job.leaseGeneration) });
    expect(claimed?.runId).toMatch(/^\d+$/);

    const viaClient = await client.cancelJob(jobId).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(viaClient).toBeInstanceOf(KairosError);
    expect(viaClient).toMatchObject({ code: 'failed-precondition', reason: 'JOB_CLAIMED', claimed: { agentId: 'worker', leaseGeneration: job.leaseGeneration } });
    const rest = await api.cancelJob(jobId);
    expect(rest.body.error).toMatchObject({ code: 'failed_precondition', reason: 'JOB_CLAIMED' });
    await client.abortRun(jobId);
  });

  it.each([
    ['an unknown job', (c: KairosClient) => c.getJob('0190a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d'), 'not-found', 'JOB_NOT_FOUND'],
    ['an abort with nothing running', async (c: KairosClient) => c.abortRun((await c.createJob({ task: 'sleep', runAt: new Date(Date.now() + 3_600_000), payload: { seconds: 0 } })).jobId), 'failed-precondition', 'NOTHING_RUNNING'],
    ['an edit against another version', async (c: KairosClient) => c.updateJob((await c.createJob({ task: 'sleep', runAt: new Date(Date.now() + 3_600_000), payload: { seconds: 0 } })).jobId, { name: 'x' }, { expectedVersion: 9 }), 'aborted', 'VERSION_MISMATCH'],
  ] as const)('%s', async (_what, call, code, reason) => {
    const error = await Promise.resolve()
      .then((): Promise<unknown> => call(client))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toMatchObject({ code, reason });
  });
});
