/**
 * Failure notifications, end to end, with real processes and a test receiver
 * on loopback that checks every signature: a job that fails its last attempt
 * sends `occurrence.failed` and `job.dead`; a missed occurrence sends
 * `occurrence.missed`; a receiver that answers 500 gets the same delivery
 * again, with backoff, until it answers 2xx; a webhook for one job hears only
 * that job; a delivery pending when its coordinator is killed is delivered
 * by the next one (the outbox is in the database). Deliveries are visible
 * through the API, and bad input is refused naming the field.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createTestDatabase,
  metricValue,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type CoordinatorProcess,
  type TestDatabase,
} from '@kairos/testing';

interface Received {
  path: string;
  deliveryId: string;
  event: string;
  attempt: number;
  body: Record<string, any>;
  signatureValid: boolean;
  answered: number;
}

/** Records every webhook call; answers 500 to the first `failFirst` attempts of each delivery, or to all while `down`. */
async function startReceiver(secrets: Map<string, string>) {
  const received: Received[] = [];
  const state = { failFirst: 0, down: false };
  const server = http.createServer((request, response) => {
    let raw = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (raw += chunk));
    request.on('end', () => {
      // The task endpoint: always fails, so jobs pointed at it fail.
      if (request.url === '/task') {
        response.writeHead(500).end('no');
        return;
      }
      const header = (name: string) => String(request.headers[name] ?? '');
      const webhookId = header('kairos-webhook');
      const [t, v1] = header('kairos-signature').split(',').map((part) => part.slice(part.indexOf('=') + 1));
      const expected = createHmac('sha256', secrets.get(webhookId) ?? 'unknown').update(`${t}.${raw}`).digest('hex');
      const signatureValid =
        t === header('kairos-timestamp') && Math.abs(Number(t) - Date.now() / 1000) < 300 && v1 !== undefined && v1.length === expected.length && timingSafeEqual(Buffer.from(v1), Buffer.from(expected));
      const deliveryId = header('kairos-delivery');
      const attempt = Number(header('kairos-attempt'));
      const answered = state.down || attempt <= state.failFirst ? 500 : 200;
      received.push({ path: request.url ?? '', deliveryId, event: header('kairos-event'), attempt, body: JSON.parse(raw), signatureValid, answered });
      response.writeHead(answered).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { url: (path: string) => `http://127.0.0.1:${port}${path}`, received, state, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('webhooks', () => {
  let db: TestDatabase;
  let coordinator: CoordinatorProcess;
  let admin: ReturnType<typeof restClient>;
  let writer: ReturnType<typeof restClient>;
  const secrets = new Map<string, string>();
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const tokens: Record<string, string> = {};
  const env = {
    KAIROS_WEBHOOK_POLL_MS: '100',
    KAIROS_WEBHOOK_RETRY_BASE_MS: '100',
    KAIROS_WEBHOOK_RETRY_CAP_MS: '400',
    KAIROS_WEBHOOK_MAX_ATTEMPTS: '6',
    KAIROS_MISFIRE_THRESHOLD_MS: '300',
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    const store = db.createStore();
    for (const role of ['admin', 'writer', 'agent'] as const) tokens[role] = (await store.tokens.create({ namespace: 'ops', role })).secret;
    receiver = await startReceiver(secrets);
    coordinator = await startCoordinatorProcess({ databaseUrl: db.url, auth: true, env });
    admin = restClient(coordinator.httpUrl, tokens.admin);
    writer = restClient(coordinator.httpUrl, tokens.writer);
    await startAgentProcess({
      coordinator: coordinator.grpcAddress,
      agentId: 'hooks-agent',
      tasks: 'http',
      env: { KAIROS_TOKEN: tokens.agent!, KAIROS_HTTP_ALLOW_HOSTS: '127.0.0.1' },
    });
  }, 60_000);
  afterAll(async () => {
    await stopAll();
    await receiver?.close();
    await db?.drop();
  });

  const createHook = async (body: Record<string, unknown>) => {
    const response = await admin.call<any>('POST', '/webhooks', body);
    expect(response.status).toBe(201);
    secrets.set(response.body.webhook.id, response.body.secret);
    return response.body.webhook as { id: string };
  };
  const failingJob = async (extra: Record<string, unknown> = {}) =>
    (await writer.createJob({ task: 'http', runAt: new Date().toISOString(), maxAttempts: 1, payload: { url: receiver.url('/task') }, ...extra })).body.jobId as string;
  const deliveriesOf = async (webhookId: string) => (await admin.call<any>('GET', `/webhooks/${webhookId}/deliveries`)).body.deliveries as Array<Record<string, any>>;

  test('bad input is refused naming the field, and only an admin manages webhooks', async () => {
    const refused = async (body: unknown, field: string, status = 400) => {
      const response = await admin.call<any>('POST', '/webhooks', body);
      expect(response.status).toBe(status);
      expect(response.body.error.field).toBe(field);
    };
    await refused({ url: 'ftp://example.com/x' }, 'url');
    await refused({ url: 'not a url' }, 'url');
    await refused({ url: receiver.url('/h'), events: ['job.exploded'] }, 'events.0');
    await refused({ url: receiver.url('/h'), events: [] }, 'events');
    await refused({ url: receiver.url('/h'), colour: 'red' }, 'colour');
    await refused({ url: receiver.url('/h'), jobId: 'nope' }, 'jobId');
    await refused({ url: receiver.url('/h'), jobId: '0190a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d' }, 'jobId', 404);
    expect((await writer.call('POST', '/webhooks', { url: receiver.url('/h') })).status).toBe(403);
    expect((await writer.call('GET', '/webhooks')).status).toBe(403);
    expect((await admin.call<any>('GET', '/webhooks')).body).toEqual({ webhooks: [] });
    expect((await admin.call<any>('GET', '/webhooks/0190a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d/deliveries')).status).toBe(404);
  });

  test('a job that fails its last attempt: occurrence.failed then job.dead, signed, retried after 500s until delivered', async () => {
    receiver.state.failFirst = 2;
    const hook = await createHook({ url: receiver.url('/all'), description: 'pager' });
    const listed = (await admin.call<any>('GET', '/webhooks')).body.webhooks;
    expect(listed).toEqual([expect.objectContaining({ id: hook.id, events: ['job.dead', 'occurrence.failed', 'occurrence.missed'], description: 'pager' })]);
    expect(JSON.stringify(listed)).not.toContain('kairos_whsec_');

    const jobId = await failingJob();
    const delivered = (event: string) => receiver.received.find((r) => r.path === '/all' && r.event === event && r.answered === 200 && r.body.job.id === jobId);
    await waitFor(() => delivered('occurrence.failed') !== undefined && delivered('job.dead') !== undefined, { timeoutMs: 30_000, description: 'both events delivered' });
    const failed = delivered('occurrence.failed')!;
    expect(failed.attempt).toBe(3);
    expect(failed.body).toMatchObject({ event: 'occurrence.failed', namespace: 'ops', deliveryId: failed.deliveryId, job: { id: jobId, task: 'http' }, run: { attempt: 1, outcome: 'FAILED' } });
    expect(delivered('job.dead')!.body).toMatchObject({ job: { id: jobId, state: 'DEAD' }, lastRun: { outcome: 'FAILED' } });
    // Every attempt was signed correctly, and each retry repeats the same delivery id and body.
    const attempts = receiver.received.filter((r) => r.deliveryId === failed.deliveryId);
    expect(attempts.map((r) => [r.attempt, r.answered])).toEqual([[1, 500], [2, 500], [3, 200]]);
    expect(receiver.received.every((r) => r.signatureValid)).toBe(true);
    expect(new Set(attempts.map((r) => JSON.stringify(r.body))).size).toBe(1);

    // The receiver answers before the coordinator records the answer: wait for the record.
    const recorded = async () => (await deliveriesOf(hook.id)).find((d) => d.id === failed.deliveryId)!;
    await waitFor(async () => (await recorded()).state === 'delivered', { timeoutMs: 15_000, description: 'the delivery recorded delivered' });
    const failedDelivery = await recorded();
    expect(failedDelivery).toMatchObject({ event: 'occurrence.failed', jobId, state: 'delivered', attempts: 3, lastStatus: 200, lastError: null, nextAttemptAt: null });
    expect(await metricValue(coordinator.httpUrl, 'kairos_webhook_deliveries_total', { result: 'retry' })).toBeGreaterThanOrEqual(4);
    expect((await admin.call<any>('DELETE', `/webhooks/${hook.id}`)).status).toBe(204);
    expect((await admin.call<any>('DELETE', `/webhooks/${hook.id}`)).status).toBe(404);
    receiver.state.failFirst = 0;
  }, 60_000);

  test('a missed occurrence sends occurrence.missed; a webhook for one job hears only that job', async () => {
    const recurring = (await writer.createJob({ task: 'nobody-runs-this', schedule: '* * * * * *', misfirePolicy: 'skip' })).body.jobId as string;
    const other = await failingJob();
    const hook = await createHook({ url: receiver.url('/one'), jobId: recurring });
    await waitFor(() => receiver.received.some((r) => r.path === '/one' && r.event === 'occurrence.missed'), { timeoutMs: 30_000, description: 'a missed occurrence delivered' });
    const missed = receiver.received.find((r) => r.path === '/one' && r.event === 'occurrence.missed')!;
    expect(missed.body).toMatchObject({ job: { id: recurring, schedule: '* * * * * *' }, run: { outcome: 'SKIPPED' } });
    await waitFor(async () => (await writer.getJob(other)).body.state === 'DEAD', { timeoutMs: 30_000, description: 'the other job DEAD' });
    expect(receiver.received.filter((r) => r.path === '/one').every((r) => r.body.job.id === recurring)).toBe(true);
    expect((await writer.call('DELETE', `/jobs/${recurring}`)).status).toBe(204);
    expect((await admin.call<any>('DELETE', `/webhooks/${hook.id}`)).status).toBe(204);
  }, 60_000);

  test('a delivery pending when its coordinator is killed is delivered by the next one', async () => {
    receiver.state.down = true;
    const hook = await createHook({ url: receiver.url('/restart'), events: ['job.dead'] });
    const jobId = await failingJob();
    await waitFor(() => receiver.received.some((r) => r.path === '/restart'), { timeoutMs: 30_000, description: 'a first, refused attempt' });
    coordinator.proc.signal('SIGKILL');
    await coordinator.proc.exited;
    receiver.state.down = false;
    const next = await startCoordinatorProcess({ databaseUrl: db.url, auth: true, env, name: 'next' });
    await waitFor(() => receiver.received.some((r) => r.path === '/restart' && r.answered === 200), { timeoutMs: 30_000, description: 'delivered by the next coordinator' });
    const calls = receiver.received.filter((r) => r.path === '/restart');
    expect(new Set(calls.map((r) => r.deliveryId)).size).toBe(1);
    expect(calls[calls.length - 1]!.body.job.id).toBe(jobId);
    const latest = async () => (await restClient(next.httpUrl, tokens.admin).call<any>('GET', `/webhooks/${hook.id}/deliveries`)).body.deliveries[0];
    await waitFor(async () => (await latest()).state === 'delivered', { timeoutMs: 15_000, description: 'the delivery recorded delivered' });
    const delivery = await latest();
    // An attempt cut short by the kill (sent, never recorded) is not counted: at most one per call seen.
    expect(delivery.state).toBe('delivered');
    expect(delivery.attempts).toBeGreaterThanOrEqual(1);
    expect(delivery.attempts).toBeLessThanOrEqual(calls.length);
  }, 60_000);
});
