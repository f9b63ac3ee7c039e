/**
 * Property tests at the edge: arbitrary JSON bodies at POST /jobs and
 * arbitrary field values at gRPC CreateJob, against a real coordinator. What
 * must hold for every input: never a 5xx or INTERNAL, the project's error
 * shape with a field for every refusal, nothing written when refused, and
 * every job that was accepted readable over both transports.
 */
import * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import { createGrpcClient, JobService, type CreateJobRequest } from '@kairos/proto';
import { createTestDatabase, restClient, startCoordinatorProcess, stopAll, type CoordinatorProcess, type TestDatabase } from '@kairos/testing';

/** Strings that include NUL, lone surrogates and other code units JSON and PostgreSQL treat specially. */
const nastyString = fc.oneof(
  fc.string(),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)) }),
  fc.constantFrom('', '\u0000', 'a\u0000b', '\ud800', '\udc00x', '\ud83d\ude00', 'x'.repeat(300)),
);
const nastyJson: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    nastyString,
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(nastyString, tie('value'), { maxKeys: 4 }),
  ),
})).value;
/** A payload nested `depth` levels deep. */
const deepPayload = fc.integer({ min: 25, max: 60 }).map((depth) => {
  let value: unknown = 1;
  for (let i = 0; i < depth; i++) value = { a: value };
  return value;
});
const runAtText = fc.oneof(
  fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom('0000-01-01T00:00:00+01:00', '9999-12-31T23:00:00-05:00', '0001-01-01T00:00:00Z', '2030-02-30T00:00:00Z', '2030-01-01T00:00:00'),
  nastyString,
);
const createBody = fc.record(
  {
    task: fc.oneof(fc.constantFrom('sleep', 'http'), nastyString, nastyJson),
    runAt: fc.oneof(runAtText, nastyJson),
    schedule: fc.oneof(fc.constantFrom('*/5 * * * *', '0 0 31 2 *', '* * *'), nastyString, nastyJson),
    timezone: fc.oneof(fc.constantFrom('UTC', 'Europe/Berlin', 'Mars/Olympus'), nastyString, nastyJson),
    payload: fc.oneof(nastyJson, deepPayload, fc.dictionary(nastyString, nastyJson)),
    name: fc.oneof(nastyString, nastyJson),
    maxAttempts: fc.oneof(fc.integer({ min: -5, max: 200 }), fc.double(), nastyJson),
    timeoutSeconds: fc.oneof(fc.double({ min: -1, max: 1e9 }), nastyJson),
    misfirePolicy: fc.oneof(fc.constantFrom('skip', 'fire-once', 'later', 99), nastyJson),
    idempotencyKey: fc.oneof(nastyString, nastyJson),
    extra: nastyJson,
  },
  { requiredKeys: [] },
);

describe('arbitrary input at the edge', () => {
  let db: TestDatabase;
  let coordinator: CoordinatorProcess;
  let api: ReturnType<typeof restClient>;
  let client: ReturnType<typeof createGrpcClient<typeof JobService.method>>;

  const jobCount = async () => Number((await db.pool.query('SELECT count(*) AS n FROM jobs')).rows[0].n);

  beforeAll(async () => {
    db = await createTestDatabase();
    const store = db.createStore();
    const secret = (await store.tokens.create({ namespace: 'fuzz', role: 'writer' })).secret;
    coordinator = await startCoordinatorProcess({ databaseUrl: db.url, auth: true });
    api = restClient(coordinator.httpUrl, secret);
    client = createGrpcClient(JobService, coordinator.grpcAddress, grpc.credentials.createInsecure(), {
      'grpc.primary_user_agent': 'fuzz',
    });
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${secret}`);
    call = (method, request) =>
      new Promise((resolve) => {
        (client[method] as (r: unknown, m: grpc.Metadata, cb: (e: grpc.ServiceError | null, v: unknown) => void) => void)(
          request,
          metadata,
          (error, value) => resolve(error ? { error } : { value }),
        );
      });
  }, 60_000);

  afterAll(async () => {
    client?.close();
    await stopAll();
    await db?.drop();
  });

  let call: (method: 'createJob' | 'getJob' | 'listJobs', request: unknown) => Promise<{ error?: grpc.ServiceError; value?: any }>;

  it('POST /jobs: never a 5xx; a refusal names a field and writes nothing; what is accepted reads back on both transports', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof({ weight: 4, arbitrary: createBody }, { weight: 1, arbitrary: nastyJson }), async (body) => {
        const before = await jobCount();
        const response = await api.call<any>('POST', '/jobs', body);
        expect(response.status).toBeLessThan(500);
        if (response.status >= 400) {
          expect(response.body.error).toEqual(expect.objectContaining({ code: expect.any(String), message: expect.any(String) }));
          if (response.status === 400) expect(typeof response.body.error.field).toBe('string');
          expect(await jobCount()).toBe(before);
          return;
        }
        const jobId = response.body.jobId as string;
        expect((await api.getJob(jobId)).status).toBe(200);
        const read = await call('getJob', { jobId });
        expect(read.error?.code).toBeUndefined();
      }),
      { numRuns: 250 },
    );
    // Pages that hold every accepted job still read over gRPC (a payload that cannot be encoded would break them).
    const page = await call('listJobs', { limit: 1000 });
    expect(page.error?.code).toBeUndefined();
  }, 120_000);

  it('gRPC CreateJob: never INTERNAL or UNKNOWN; a refusal writes nothing', async () => {
    const request = fc.record({
      task: fc.oneof(fc.constantFrom('sleep'), nastyString),
      when: fc.oneof(
        fc.record({
          case: fc.constant('runAt' as const),
          value: fc.record({
            seconds: fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.constantFrom(1_000_000_000_000_000n, 1_900_000_000n, -1n)),
            nanos: fc.oneof(fc.integer({ min: -2_000_000_000, max: 2_000_000_000 }), fc.constant(0)),
          }),
        }),
        fc.record({ case: fc.constant('schedule' as const), value: fc.oneof(fc.constantFrom('*/5 * * * *'), nastyString) }),
        fc.constant({ case: undefined }),
      ),
      timezone: nastyString,
      payload: fc.oneof(fc.dictionary(nastyString, nastyJson, { maxKeys: 4 }), deepPayload.filter((p) => typeof p === 'object')),
      name: nastyString,
      maxAttempts: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
      timeoutSeconds: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
      misfirePolicy: fc.integer({ min: -3, max: 100 }),
      idempotencyKey: nastyString,
    });
    await fc.assert(
      fc.asyncProperty(request, async (req) => {
        const before = await jobCount();
        const result = await call('createJob', req as unknown as CreateJobRequest);
        expect(coordinator.proc.child.exitCode).toBeNull();
        if (result.error) {
          expect([grpc.status.INTERNAL, grpc.status.UNKNOWN]).not.toContain(result.error.code);
          expect(await jobCount()).toBe(before);
          return;
        }
        const read = await call('getJob', { jobId: result.value.jobId });
        expect(read.error?.code).toBeUndefined();
      }),
      { numRuns: 250 },
    );
  }, 120_000);

  it('refuses each known bad input with 400 naming the field', async () => {
    // A task that is not built in: its payload is free-form (built-in payloads are checked against their contracts).
    const base = { task: 'report', runAt: '2030-01-01T00:00:00Z' };
    let deep: unknown = 1;
    for (let i = 0; i < 33; i++) deep = { a: deep };
    let deepest: unknown = 1;
    for (let i = 0; i < 32; i++) deepest = { a: deepest };
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...base, payload: { a: 'x\u0000' } }, 'payload.a'],
      [{ ...base, payload: { 'k\u0000': 1 } }, 'payload.k\u0000'],
      [{ ...base, name: 'a\u0000b' }, 'name'],
      [{ ...base, idempotencyKey: '\u0000' }, 'idempotencyKey'],
      [{ ...base, name: '\ud800' }, 'name'],
      [{ ...base, payload: deep }, 'payload'],
      [{ task: 'sleep', runAt: '0000-01-01T00:00:00+01:00' }, 'runAt'],
      [{ task: 'sleep', runAt: '9999-12-31T23:00:00-05:00' }, 'runAt'],
      [{ task: 'sleep', runAt: '0001-01-01T00:00:00Z' }, 'runAt'],
      [{ ...base, task: 5 }, 'task'],
      [{ ...base, maxAttempts: 'three' }, 'maxAttempts'],
      [{ ...base, name: 7 }, 'name'],
    ];
    for (const [body, field] of cases) {
      const response = await api.call<any>('POST', '/jobs', body);
      expect({ field, status: response.status, got: response.body.error?.field }).toEqual({ field, status: 400, got: field });
    }
    const wrongType = await api.call<any>('POST', '/jobs', { ...base, task: 5 });
    expect(wrongType.body.error.message).toBe('task must be a string');
    // 32 levels are stored and read back over gRPC.
    const deepest32 = await api.createJob({ ...base, payload: deepest as Record<string, unknown> });
    expect(deepest32.status).toBe(201);
    expect((await call('getJob', { jobId: deepest32.body.jobId })).error?.code).toBeUndefined();

    for (const [path, field] of [['/jobs/', 'jobId'], ['/jobs/not-a-uuid', 'jobId']] as const) {
      const response = await api.call<any>('GET', path);
      expect({ path, status: response.status, field: response.body.error?.field }).toEqual({ path, status: 400, field });
    }
    const long = await api.call<any>('GET', `/jobs/${'a'.repeat(300)}`);
    expect(long.status).toBe(414);
    expect(long.body.error.code).toBe('invalid_argument');

    const badEnum = await call('createJob', { task: 'sleep', when: { case: 'schedule', value: '* * * * *' }, misfirePolicy: 99 });
    expect(badEnum.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    const badState = await call('listJobs', { state: 42 });
    expect(badState.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    const farFuture = await call('createJob', { task: 'sleep', when: { case: 'runAt', value: { seconds: 1_000_000_000_000_000n, nanos: 0 } } });
    expect(farFuture.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    const emptyId = await call('getJob', { jobId: '' });
    expect(emptyId.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    // A field path with characters metadata cannot carry (found by this file: it crashed the coordinator).
    const controlKey = await call('createJob', { task: 'sleep', when: { case: 'schedule', value: '* * * * *' }, payload: { 'a\u0001\u0000': 1 } });
    expect(controlKey.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(controlKey.error?.metadata.get('kairos-field')).toEqual(['payload.a\\u0001\\u0000']);
    expect((await api.listJobs()).status).toBe(200);
  }, 60_000);
});
