/**
 * Batch create against a live coordinator: REST POST /jobs:batch and gRPC
 * CreateJobs (raw and through libs/client); `kairos jobs create-many` is
 * apps/cli's create-many.pg.test.ts. Each item is answered on its own and in order —
 * one bad item does not sink the others, idempotency keys work per item and
 * between items — a bad envelope changes nothing, and jobs made in a batch
 * run like any other.
 */
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import http from 'node:http';
import * as grpc from '@grpc/grpc-js';
import { createKairosClient, KairosError, type KairosClient } from '@kairos/client';
import { BadRequestSchema, createGrpcClient, ErrorInfoSchema, JobService, type CreateJobsResponse, type MisfirePolicy } from '@kairos/proto';
import {
  createTestDatabase,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type CoordinatorProcess,
  type TestDatabase,
} from '@kairos/testing';

describe('batch create', () => {
  let db: TestDatabase;
  let coordinator: CoordinatorProcess;
  let api: ReturnType<typeof restClient>;
  let client: KairosClient;
  let raw: ReturnType<typeof createGrpcClient<typeof JobService.method>>;

  beforeAll(async () => {
    db = await createTestDatabase();
    coordinator = await startCoordinatorProcess({ databaseUrl: db.url });
    api = restClient(coordinator.httpUrl);
    client = createKairosClient({ address: coordinator.grpcAddress });
    raw = createGrpcClient(JobService, coordinator.grpcAddress, grpc.credentials.createInsecure());
  }, 60_000);
  afterAll(async () => {
    client?.close();
    raw?.close();
    await stopAll();
    await db?.drop();
  });

  const later = () => new Date(Date.now() + 3_600_000).toISOString();
  /**
   * A POST announcing a body of `bytes` without sending it: the coordinator must judge the size
   * from Content-Length and answer at once (sending the body races the server's close: EPIPE).
   */
  const postAnnouncing = (url: string, bytes: number) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const request = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': bytes } }, (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => {
          resolve({ status: response.statusCode ?? 0, body: text });
          request.destroy();
        });
      });
      request.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code !== 'ECONNRESET') reject(error);
      });
      request.flushHeaders();
    });
  const jobCount = async () => Number((await db.pool.query('SELECT count(*) AS n FROM jobs')).rows[0].n);

  it('REST: each item answered in order with the status POST /jobs would give it alone', async () => {
    const response = await api.call<any>('POST', '/jobs:batch', {
      jobs: [
        { task: 'report', runAt: later(), payload: { seconds: 1 }, name: 'one' },
        { task: 'report', schedule: '0 9 * * *', timezone: 'Mars/Olympus' },
        { task: 'report', schedule: '*/5 * * * *', idempotencyKey: 'batch-k1', name: 'recurring' },
        { task: 'report', schedule: '*/5 * * * *', idempotencyKey: 'batch-k1', name: 'recurring' },
        { task: 'report', schedule: '*/5 * * * *', idempotencyKey: 'batch-k1', name: 'something else' },
        'not an object',
        { task: 'report', runAt: later(), surprise: true },
      ],
    });
    expect(response.status).toBe(200);
    const results = response.body.results;
    expect(results.map((r: any) => [r.index, r.status, r.created])).toEqual([
      [0, 201, true],
      [1, 400, false],
      [2, 201, true],
      [3, 200, false],
      [4, 409, false],
      [5, 400, false],
      [6, 400, false],
    ]);
    expect(results[1].error).toMatchObject({ code: 'invalid_argument', reason: 'INVALID_ARGUMENT', field: 'timezone' });
    expect(results[1].jobId).toBeNull();
    expect(results[3].jobId).toBe(results[2].jobId);
    expect(results[4].error).toMatchObject({ code: 'already_exists', reason: 'IDEMPOTENCY_KEY_REUSED', field: 'idempotencyKey', details: { jobId: results[2].jobId } });
    expect(results[5].error.field).toBe('body');
    expect(results[6].error.field).toBe('surprise');
    expect(results[0].error).toBeNull();
    // The jobs made are ordinary jobs.
    const one = await api.getJob(results[0].jobId);
    expect(one.body).toMatchObject({ name: 'one', state: 'DUE', payload: { seconds: 1 } });
    // Repeating the whole call is safe for the keyed item.
    const again = await api.call<any>('POST', '/jobs:batch', { jobs: [{ task: 'report', schedule: '*/5 * * * *', idempotencyKey: 'batch-k1', name: 'recurring' }] });
    expect(again.body.results[0]).toMatchObject({ status: 200, jobId: results[2].jobId, created: false });
  });

  it('REST: a bad envelope is refused whole, naming the field, and changes nothing', async () => {
    const before = await jobCount();
    const cases: Array<[unknown, string]> = [
      [[{ task: 'report', runAt: later() }], 'body'],
      [{}, 'jobs'],
      [{ jobs: [] }, 'jobs'],
      [{ jobs: {} }, 'jobs'],
      [{ jobs: Array.from({ length: 1001 }, () => ({ task: 'report', runAt: later() })) }, 'jobs'],
      [{ jobs: [{ task: 'report', runAt: later() }], extra: 1 }, 'extra'],
    ];
    for (const [body, field] of cases) {
      const response = await api.call<any>('POST', '/jobs:batch', body);
      expect({ field, status: response.status, error: response.body.error?.field }).toEqual({ field, status: 400, error: field });
    }
    const huge = await postAnnouncing(`${coordinator.httpUrl}/jobs:batch`, 9 * 1024 * 1024);
    expect(huge.status).toBe(413);
    expect(JSON.parse(huge.body).error).toMatchObject({ code: 'payload_too_large', message: expect.stringContaining(String(8 * 1024 * 1024)) });
    // Other methods on the path are a 405 naming POST; a path that only looks alike is a 404.
    const wrongMethod = await api.call<any>('GET', '/jobs:batch');
    expect(wrongMethod.status).toBe(405);
    expect((await api.call<any>('POST', '/jobsXbatch', { jobs: [] })).status).toBe(404);
    expect(await jobCount()).toBe(before);
  });

  it('gRPC: one result per item, a refused item carries the google.rpc.Status CreateJob would fail with', async () => {
    const response = await new Promise<CreateJobsResponse>((resolve, reject) =>
      raw.createJobs(
        {
          jobs: [
            { task: 'report', when: { case: 'runAt', value: { seconds: BigInt(Math.floor(Date.now() / 1000) + 3600), nanos: 0 } } },
            { task: 'report', when: { case: 'schedule', value: '0 * * * *' }, retry: { multiplier: 0.5 } },
            { task: 'report', when: { case: 'schedule', value: '0 * * * *' }, misfirePolicy: 42 as MisfirePolicy },
          ],
        },
        (error, value) => (error || !value ? reject(error) : resolve(value)),
      ),
    );
    expect(response.results.map((r) => [r.jobId !== '', r.created, r.error?.code])).toEqual([
      [true, true, undefined],
      [false, false, grpc.status.INVALID_ARGUMENT],
      [false, false, grpc.status.INVALID_ARGUMENT],
    ]);
    const status = response.results[1]!.error!;
    expect(status.details.map((d) => anyUnpack(d, ErrorInfoSchema)).find(Boolean)).toMatchObject({ reason: 'INVALID_ARGUMENT', domain: 'kairos.dev' });
    expect(status.details.map((d) => anyUnpack(d, BadRequestSchema)).find(Boolean)?.fieldViolations[0]?.field).toBe('retry.multiplier');
    // An empty or over-long list fails the call itself, naming `jobs`.
    const empty = await new Promise<grpc.ServiceError>((resolve, reject) =>
      raw.createJobs({ jobs: [] }, (error) => (error ? resolve(error) : reject(new Error('accepted')))),
    );
    expect(empty.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(empty.metadata.get('kairos-field')).toEqual(['jobs']);
  });

  it('libs/client: createJobs answers each input, the client-side and server-side refusals as KairosErrors', async () => {
    const runAt = later();
    const answers = await client.createJobs([
      { task: 'report', runAt, idempotencyKey: 'client-k' },
      { task: 'report', runAt: 'not a time' },
      { task: 'report', schedule: '61 * * * *' },
      { task: 'report', runAt, idempotencyKey: 'client-k' },
    ]);
    expect(answers[0]).toMatchObject({ created: true, error: null });
    expect(answers[1]!.error).toBeInstanceOf(KairosError);
    expect(answers[1]!.error).toMatchObject({ code: 'invalid-argument', field: 'runAt' });
    expect(answers[2]!.error).toMatchObject({ code: 'invalid-argument', reason: 'INVALID_ARGUMENT', field: 'schedule' });
    // An identical repeat of an item of the same call: the first one's job.
    expect(answers[3]).toEqual({ jobId: answers[0]!.jobId, created: false, error: null });
    await expect(client.createJobs([])).rejects.toMatchObject({ code: 'invalid-argument', field: 'jobs' });
  });

  it('jobs made in a batch run and report like any other', async () => {
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'batch-worker', tasks: 'sleep' });
    const response = await api.call<any>('POST', '/jobs:batch', {
      jobs: Array.from({ length: 20 }, (_, i) => ({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 0 }, name: `run-${i}` })),
    });
    const ids: string[] = response.body.results.map((r: any) => r.jobId);
    expect(ids).toHaveLength(20);
    await waitFor(
      async () => {
        const states = await Promise.all(ids.map(async (id) => (await api.getJob(id)).body.state));
        return states.every((state) => state === 'COMPLETED');
      },
      { timeoutMs: 60_000, intervalMs: 200, description: 'the 20 batch jobs to complete' },
    );
    const runs = await api.runs(ids[0]!);
    expect(runs.body.runs).toEqual([expect.objectContaining({ outcome: 'SUCCEEDED', workerId: 'batch-worker' })]);
  });
});
