/**
 * Where the REST API meets its OpenAPI document (docs/openapi.json): the
 * refusals schemathesis found (tools/contract) each pinned by a test — a
 * method a path does not have is a 405 naming the ones it has, query
 * parameters are given once and never empty, a cursor that was never handed
 * out is a 400 (REST and gRPC alike), null is the same as leaving a field out,
 * and text PostgreSQL cannot hold (NUL) is a 400 naming the field, not a 500.
 */
import * as grpc from '@grpc/grpc-js';
import { createGrpcClient, JobService } from '@kairos/proto';
import { createTestDatabase, restClient, startCoordinatorProcess, stopAll, type TestDatabase } from '@kairos/testing';

describe('REST contract edges', () => {
  let db: TestDatabase;
  let api: ReturnType<typeof restClient>;
  let httpUrl: string;
  let admin: string;
  let raw: ReturnType<typeof createGrpcClient<typeof JobService.method>>;

  beforeAll(async () => {
    db = await createTestDatabase();
    admin = (await db.createStore().tokens.create({ namespace: 'contract', role: 'admin' })).secret;
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url, auth: true });
    httpUrl = coordinator.httpUrl;
    api = restClient(httpUrl, admin);
    raw = createGrpcClient(JobService, coordinator.grpcAddress, grpc.credentials.createInsecure());
  }, 60_000);
  afterAll(async () => {
    raw?.close();
    await stopAll();
    await db?.drop();
  });

  test('a method the path does not have is 405 with Allow; an unknown path stays 404', async () => {
    const response = await fetch(`${httpUrl}/jobs`, { method: 'PUT', headers: { authorization: `Bearer ${admin}` } });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')?.split(', ').sort()).toEqual(['GET', 'HEAD', 'POST']);
    expect(((await response.json()) as { error: { reason: string } }).error.reason).toBe('METHOD_NOT_ALLOWED');
    // A method fastify parses a body for (QUERY) gets the same answer, not a content-type complaint.
    const query = await fetch(`${httpUrl}/agents`, { method: 'QUERY', headers: { authorization: `Bearer ${admin}` } });
    expect([query.status, query.headers.get('allow')]).toEqual([405, 'GET, HEAD']);
    expect((await api.call('GET', '/nothing-here')).status).toBe(404);
  });

  test.each([
    ['/jobs?state=', 'state'],
    ['/jobs?limit=', 'limit'],
    ['/jobs?cursor=', 'cursor'],
    ['/jobs?limit=1&limit=2', 'limit'],
    ['/jobs?cursor=not-a-cursor', 'cursor'],
    ['/jobs/0190a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d/runs?cursor=', 'cursor'],
    ['/jobs/0190a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d/upcoming?count=', 'count'],
  ])('GET %s is a 400 naming %s', async (path, field) => {
    const response = await api.call<any>('GET', path);
    expect([response.status, response.body.error.field]).toEqual([400, field]);
  });

  test('gRPC ListJobs refuses a cursor that was never handed out, naming it', async () => {
    const error = await new Promise<grpc.ServiceError | null>((resolve) => {
      const metadata = new grpc.Metadata();
      metadata.set('authorization', `Bearer ${admin}`);
      raw.listJobs({ cursor: 'garbage' } as never, metadata, (e) => resolve(e));
    });
    expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error?.metadata.get('kairos-field')).toEqual(['cursor']);
  });

  test('a page of jobs hands out a cursor that works, in any letter case', async () => {
    for (let i = 0; i < 3; i++) expect((await api.createJob({ task: 'paged', runAt: '2030-01-01T00:00:00Z' })).status).toBe(201);
    const first = await api.listJobs('?task=paged&limit=2');
    expect(first.body.jobs).toHaveLength(2);
    const second = await api.listJobs(`?task=paged&limit=2&cursor=${String(first.body.nextCursor).toUpperCase()}`);
    expect([second.status, second.body.jobs.length, second.body.nextCursor]).toEqual([200, 1, null]);
  });

  test('name keeps the jobs whose name starts with it, literally, on REST and gRPC', async () => {
    for (const name of ['nightly-report', 'nightly-backup', 'hourly-report', '50%_off']) {
      expect((await api.createJob({ task: 'named', name, runAt: '2030-01-01T00:00:00Z' })).status).toBe(201);
    }
    const names = async (query: string) => ((await api.listJobs(query)).body.jobs as Array<{ name: string }>).map((job) => job.name);
    expect(await names('?task=named&name=nightly-')).toEqual(['nightly-report', 'nightly-backup']);
    expect(await names('?task=named&name=50%25_')).toEqual(['50%_off']);
    expect(await names('?task=named&name=5_')).toEqual([]);
    expect(await names('?task=named&name=Nightly')).toEqual([]);
    const tooLong = await api.listJobs(`?name=${'x'.repeat(201)}`);
    expect([tooLong.status, tooLong.body.error.field]).toEqual([400, 'name']);
    // A NUL in a text filter is refused naming it (schemathesis found task=…%00… answered 500).
    for (const field of ['task', 'name']) {
      const nul = await api.listJobs(`?${field}=a%00b`);
      expect([nul.status, nul.body.error.field]).toEqual([400, field]);
    }
    const viaGrpc = await new Promise<{ jobs: Array<{ name: string }> }>((resolve, reject) => {
      const metadata = new grpc.Metadata();
      metadata.set('authorization', `Bearer ${admin}`);
      raw.listJobs({ task: 'named', name: 'hourly' } as never, metadata, (e, value) => (e ? reject(e) : resolve(value as never)));
    });
    expect(viaGrpc.jobs.map((job) => job.name)).toEqual(['hourly-report']);
  });

  test('null is the same as leaving a field out', async () => {
    const created = await api.createJob({ task: 'nulls', schedule: '0 * * * *', timezone: null, misfirePolicy: null, runAt: null });
    expect(created.status).toBe(201);
    expect([created.body.job.timezone, created.body.job.misfirePolicy]).toEqual(['UTC', 'fire-once']);
    const preview = await api.call<any>('POST', '/schedules/preview', { schedule: '0 * * * *', from: null, count: null, timezone: null });
    expect([preview.status, preview.body.occurrences?.length]).toEqual([200, 10]);
  });

  test('a token name with a NUL character is a 400 naming it, and makes no token', async () => {
    const before = (await api.call<any>('GET', '/tokens')).body.tokens.length;
    const response = await api.call<any>('POST', '/tokens', { role: 'reader', name: 'a\u0000b' });
    expect([response.status, response.body.error.field]).toEqual([400, 'name']);
    expect((await api.call<any>('GET', '/tokens')).body.tokens.length).toBe(before);
  });
});
