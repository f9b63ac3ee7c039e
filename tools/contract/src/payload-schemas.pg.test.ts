/**
 * Payload checks for SDK tasks, end to end: an agent process whose handler
 * declares its payload schema (defineTask, tools/contract/support/sdk-agent.cjs)
 * advertises it; from then on the coordinator refuses a job of that task whose
 * payload the schema rejects, at create and at edit, over REST and gRPC,
 * naming the field — in the agent's namespace only. Before any agent has
 * advertised a schema, payloads are not checked. During a rollout (two
 * schemas known) a payload either accepts passes. A schema that could stall
 * the coordinator (an exponential regular expression) is refused, counted,
 * and the agent still connects.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { fromBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { BadRequestSchema, createGrpcClient, JobService, RpcStatusSchema, STATUS_DETAILS_KEY } from '@kairos/proto';
import {
  createTestDatabase,
  metricValue,
  restClient,
  spawnNode,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type CoordinatorProcess,
  type TestDatabase,
} from '@kairos/testing';

const SDK_AGENT = path.join(__dirname, '..', 'support', 'sdk-agent.cjs');
const INVOICE = '0190a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d';

describe('payload schemas declared by SDK handlers', () => {
  let db: TestDatabase;
  let coordinator: CoordinatorProcess;
  let api: ReturnType<typeof restClient>;
  let other: ReturnType<typeof restClient>;
  let writer: string;
  let agentToken: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    const store = db.createStore();
    writer = (await store.tokens.create({ namespace: 'billing', role: 'writer' })).secret;
    agentToken = (await store.tokens.create({ namespace: 'billing', role: 'agent' })).secret;
    const otherWriter = (await store.tokens.create({ namespace: 'elsewhere', role: 'writer' })).secret;
    coordinator = await startCoordinatorProcess({ databaseUrl: db.url, auth: true });
    api = restClient(coordinator.httpUrl, writer);
    other = restClient(coordinator.httpUrl, otherWriter);
  }, 60_000);
  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });

  async function startSdkAgent(agentId: string, schema: 'v1' | 'v2' | 'unsafe', task = 'send-invoice') {
    spawnNode(agentId, SDK_AGENT, {
      KAIROS_COORDINATOR: coordinator.grpcAddress,
      KAIROS_AGENT_ID: agentId,
      KAIROS_TOKEN: agentToken,
      KAIROS_LOG_LEVEL: 'info',
      SDK_SCHEMA: schema,
      SDK_TASK: task,
    });
    await waitFor(async () => ((await api.agents()).body as Array<{ agentId: string }>).some((agent) => agent.agentId === agentId), {
      timeoutMs: 30_000,
      description: `${agentId} connected`,
    });
  }

  const invoice = (payload: Record<string, unknown>, runAt = '2030-01-01T00:00:00Z') => api.createJob({ task: 'send-invoice', runAt, payload });
  const refusedField = async (response: Promise<{ status: number; body: any }>) => {
    const answer = await response;
    expect(answer.status).toBe(400);
    return answer.body.error.field as string;
  };

  test('before any agent advertised a schema, payloads are not checked', async () => {
    expect((await invoice({ anything: true })).status).toBe(201);
  });

  test('once advertised, a payload the schema rejects is a 400 naming the field; a good one runs', async () => {
    await startSdkAgent('invoicer-1', 'v1');
    expect(await refusedField(invoice({ invoiceId: 'not-a-uuid', amountCents: 5 }))).toBe('payload.invoiceId');
    expect(await refusedField(invoice({ invoiceId: INVOICE }))).toBe('payload.amountCents');
    expect(await refusedField(invoice({ invoiceId: INVOICE, amountCents: 1.5 }))).toBe('payload.amountCents');
    expect(await refusedField(invoice({ invoiceId: INVOICE, amountCents: 5, extra: 1 }))).toBe('payload.extra');
    expect(await refusedField(invoice({ invoiceId: INVOICE, amountCents: 5, currency: 'GBP' }))).toBe('payload.currency');
    const good = await invoice({ invoiceId: INVOICE, amountCents: 5, currency: 'EUR' }, new Date().toISOString());
    expect(good.status).toBe(201);
    await waitFor(async () => (await api.getJob(good.body.jobId)).body.state === 'COMPLETED', { timeoutMs: 30_000, description: 'COMPLETED' });
  });

  test('an edit is checked the same way, and a refused edit changes nothing', async () => {
    const created = await invoice({ invoiceId: INVOICE, amountCents: 5 });
    const jobId = created.body.jobId as string;
    const refused = await api.call<any>('PATCH', `/jobs/${jobId}`, { payload: { invoiceId: INVOICE, amountCents: -1 } });
    expect([refused.status, refused.body.error.field]).toEqual([400, 'payload.amountCents']);
    expect((await api.getJob(jobId)).body).toMatchObject({ version: 1, payload: { amountCents: 5 } });
    expect((await api.call('PATCH', `/jobs/${jobId}`, { payload: { invoiceId: INVOICE, amountCents: 7 } })).status).toBe(200);
  });

  test('over gRPC: INVALID_ARGUMENT with a BadRequest naming the payload key as given', async () => {
    const client = createGrpcClient(JobService, coordinator.grpcAddress, grpc.credentials.createInsecure());
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${writer}`);
    const error = await new Promise<grpc.ServiceError | null>((resolve) =>
      client.createJob(
        { task: 'send-invoice', when: { case: 'schedule', value: '0 * * * *' }, payload: { invoiceId: INVOICE } } as never,
        metadata,
        (e) => resolve(e),
      ),
    );
    client.close();
    expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    const status = fromBinary(RpcStatusSchema, error!.metadata.get(STATUS_DETAILS_KEY)[0] as Uint8Array);
    const bad = status.details.map((detail) => anyUnpack(detail, BadRequestSchema)).find((detail) => detail !== undefined);
    expect(bad?.fieldViolations[0]?.field).toBe('payload.amountCents');
  });

  test("another namespace's jobs of the same task name are not checked against it", async () => {
    expect((await other.createJob({ task: 'send-invoice', runAt: '2030-01-01T00:00:00Z', payload: { anything: true } })).status).toBe(201);
  });

  test('during a rollout that renamed a field, a payload either schema accepts passes', async () => {
    await startSdkAgent('invoicer-2', 'v2');
    expect((await invoice({ invoiceId: INVOICE, amountCents: 5 })).status).toBe(201);
    expect((await invoice({ invoiceId: INVOICE, amount: 5.5 })).status).toBe(201);
    expect((await invoice({ invoiceId: INVOICE })).status).toBe(400);
    const rows = await db.pool.query(`SELECT count(*)::int AS n FROM task_schemas WHERE namespace = 'billing' AND task = 'send-invoice'`);
    expect(rows.rows[0].n).toBe(2);
  });

  test('a schema with an exponential regular expression is refused and counted; the agent still connects and its task is unchecked', async () => {
    const metric = () => metricValue(coordinator.httpUrl, 'kairos_payload_schemas_refused_total');
    const before = await metric();
    await startSdkAgent('risky-1', 'unsafe', 'risky');
    expect(await metric()).toBe(before + 1);
    const rows = await db.pool.query(`SELECT count(*)::int AS n FROM task_schemas WHERE task = 'risky'`);
    expect(rows.rows[0].n).toBe(0);
    expect((await api.createJob({ task: 'risky', runAt: '2030-01-01T00:00:00Z', payload: { code: 'aaaa!' } })).status).toBe(201);
  });
});
