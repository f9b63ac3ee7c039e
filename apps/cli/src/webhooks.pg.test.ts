/**
 * Webhooks through gRPC (WebhookService), as the CLI and the TypeScript
 * client use them, against a live coordinator that requires tokens: create
 * (the secret printed once), list, the deliveries of a job that went DEAD,
 * delete; refusals name the field; only admin tokens are served. And
 * `kairos whoami` / `whoami()`, which any valid token may call.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createKairosClient, KairosError, KairosErrorCode } from '@kairos/client';
import { createTestDatabase, startAgentProcess, startCoordinatorProcess, stopAll, waitFor, type CoordinatorProcess, type TestDatabase } from '@kairos/testing';
import { runCli } from './run';
import { capturedIo } from './test-support/captured-io';

describe('kairos webhooks (and the client)', () => {
  let db: TestDatabase;
  let coordinator: CoordinatorProcess;
  const tokens: Record<string, string> = {};
  const received: Array<{ event: string; delivery: string }> = [];
  let server: http.Server;
  let port: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    const store = db.createStore();
    for (const role of ['admin', 'writer', 'agent'] as const) tokens[role] = (await store.tokens.create({ namespace: 'cli', role })).secret;
    server = http.createServer((request, response) => {
      request.resume();
      if (request.url === '/task') return void response.writeHead(500).end();
      received.push({ event: String(request.headers['kairos-event']), delivery: String(request.headers['kairos-delivery']) });
      response.writeHead(204).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    coordinator = await startCoordinatorProcess({ databaseUrl: db.url, auth: true, env: { KAIROS_WEBHOOK_POLL_MS: '100' } });
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'cli-hooks', tasks: 'http', env: { KAIROS_TOKEN: tokens.agent! } });
  }, 60_000);
  afterAll(async () => {
    await stopAll();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await db?.drop();
  });

  const cli = async (argv: string[], token = tokens.admin!) => {
    const captured = capturedIo({ KAIROS_COORDINATOR: coordinator.grpcAddress, KAIROS_TOKEN: token, KAIROS_DATA_DIR: '/nonexistent-kairos-dir' });
    const code = await runCli(argv, captured.io);
    return { code, stdout: captured.stdout(), stderr: captured.stderr() };
  };

  it('creates, lists, shows deliveries and deletes; the secret is printed once', async () => {
    const created = await cli(['webhooks', 'create', '--url', `http://127.0.0.1:${port}/hook`, '--event', 'job.dead', '--event', 'occurrence.failed', '--description', 'pager']);
    expect(created.code).toBe(0);
    const secret = created.stdout.trim();
    expect(secret).toMatch(/^kairos_whsec_[A-Za-z0-9_-]{43}$/);
    const listed = await cli(['--json', 'webhooks', 'list']);
    const [hook] = JSON.parse(listed.stdout) as Array<{ id: string; events: string[]; jobId: string | null; description: string }>;
    expect(hook).toMatchObject({ events: ['job.dead', 'occurrence.failed'], jobId: null, description: 'pager' });
    expect(listed.stdout).not.toContain(secret);
    expect((await cli(['webhooks', 'list'])).stdout).toContain(`http://127.0.0.1:${port}/hook`);

    const client = createKairosClient({ address: coordinator.grpcAddress, token: tokens.writer! });
    const job = await client.createJob({ task: 'http', runAt: new Date(), maxAttempts: 1, payload: { url: `http://127.0.0.1:${port}/task` } });
    client.close();
    await waitFor(() => received.length >= 2, { timeoutMs: 30_000, description: 'two deliveries received' });
    // The receiver answers before the coordinator records the answer: wait for the record too.
    const deliveries = async () => JSON.parse((await cli(['--json', 'webhooks', 'deliveries', hook!.id])).stdout) as { deliveries: Array<Record<string, unknown>>; nextCursor: string | null };
    await waitFor(async () => (await deliveries()).deliveries.every((d) => d.state === 'delivered'), { timeoutMs: 30_000, description: 'both deliveries recorded delivered' });
    const page = await deliveries();
    expect(page.deliveries.map((d) => [d.event, d.state, d.jobId, d.attempts, d.lastStatus]).sort()).toEqual([
      ['job.dead', 'delivered', job.job.id, 1, 204],
      ['occurrence.failed', 'delivered', job.job.id, 1, 204],
    ]);
    const first = JSON.parse((await cli(['--json', 'webhooks', 'deliveries', hook!.id, '--limit', '1'])).stdout) as { deliveries: Array<{ id: string }>; nextCursor: string };
    const second = JSON.parse((await cli(['--json', 'webhooks', 'deliveries', hook!.id, '--limit', '1', '--cursor', first.nextCursor])).stdout) as { deliveries: Array<{ id: string }>; nextCursor: null };
    expect([first.deliveries[0]!.id, second.deliveries[0]!.id].sort()).toEqual(received.map((r) => r.delivery).sort());
    expect(second.nextCursor).toBeNull();
    expect((await cli(['webhooks', 'deliveries', hook!.id])).stdout).toMatch(/job\.dead\s+\S+\s+delivered\s+1\s+204/);

    expect((await cli(['webhooks', 'delete', hook!.id])).code).toBe(0);
    expect((await cli(['--json', 'webhooks', 'list'])).stdout.trim()).toBe('[]');
  }, 60_000);

  it('refusals name the field; a writer token is refused; an unknown event never leaves the CLI', async () => {
    const admin = createKairosClient({ address: coordinator.grpcAddress, token: tokens.admin! });
    const writer = createKairosClient({ address: coordinator.grpcAddress, token: tokens.writer! });
    try {
      const refusal = async (call: Promise<unknown>) => {
        const error = await call.then(
          () => undefined,
          (caught: unknown) => caught,
        );
        expect(error).toBeInstanceOf(KairosError);
        return error as KairosError;
      };
      expect(await refusal(admin.createWebhook({ url: 'ftp://example.com' }))).toMatchObject({ code: KairosErrorCode.InvalidArgument, field: 'url' });
      expect(await refusal(admin.createWebhook({ url: `http://127.0.0.1:${port}/x`, events: ['job.exploded' as never] }))).toMatchObject({
        code: KairosErrorCode.InvalidArgument,
        field: 'events.0',
      });
      expect(await refusal(admin.deleteWebhook('0190a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d'))).toMatchObject({ code: KairosErrorCode.NotFound });
      expect(await refusal(admin.listWebhookDeliveries('nope'))).toMatchObject({ code: KairosErrorCode.InvalidArgument, field: 'webhookId' });
      expect(await refusal(writer.listWebhooks())).toMatchObject({ code: KairosErrorCode.PermissionDenied });
    } finally {
      admin.close();
      writer.close();
    }
    const bad = await cli(['webhooks', 'create', '--url', 'http://127.0.0.1/x', '--event', 'job.exploded']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('job.dead, occurrence.failed, occurrence.missed');
  }, 60_000);

  it('whoami answers any valid token with its namespace, role and name, over gRPC as over REST', async () => {
    const agentClient = createKairosClient({ address: coordinator.grpcAddress, token: tokens.agent! });
    try {
      expect(await agentClient.whoami()).toMatchObject({ namespace: 'cli', role: 'agent', tokenName: null, tokenId: expect.any(String) });
    } finally {
      agentClient.close();
    }
    const json = JSON.parse((await cli(['--json', 'whoami'], tokens.writer!)).stdout) as Record<string, unknown>;
    const rest = (await (await fetch(`${coordinator.httpUrl}/whoami`, { headers: { authorization: `Bearer ${tokens.writer}` } })).json()) as Record<string, unknown>;
    expect(json).toEqual(rest);
    expect(json).toMatchObject({ namespace: 'cli', role: 'writer' });
    expect((await cli(['whoami'])).stdout).toMatch(/^admin of namespace cli \(token [0-9a-f-]{36}\)\n$/);
    const refused = await cli(['whoami'], 'kairos_not-a-real-token');
    expect(refused.code).not.toBe(0);
  });
});
