/**
 * Authentication, roles and namespaces, end to end: a real coordinator process
 * with tokens required, every endpoint called over REST and gRPC by every kind
 * of caller, and a check after each refusal that nothing changed.
 */
import * as grpc from '@grpc/grpc-js';
import { createKairosClient, KairosError, type KairosClient } from '@kairos/client';
import type { Store, TokenRole } from '@kairos/store';
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

type Caller = 'none' | 'garbage' | 'revoked' | 'reader' | 'writer' | 'admin' | 'agent' | 'otherWriter' | 'otherAdmin';
type Need = 'read' | 'write' | 'admin';

const NS = 'alpha';
const OTHER_NS = 'beta';

/** What a caller gets (as an HTTP status; gRPC maps it) from a call needing `need`, on a job (or token) of namespace alpha. */
function expectedStatus(caller: Caller, need: Need, ok: number, scoped: boolean): number {
  switch (caller) {
    case 'none':
    case 'garbage':
    case 'revoked':
      return 401;
    case 'agent':
      return 403;
    case 'reader':
      return need === 'read' ? ok : 403;
    case 'writer':
      return need === 'admin' ? 403 : ok;
    case 'admin':
      return ok;
    case 'otherWriter':
      if (need === 'admin') return 403;
      return scoped ? 404 : ok;
    case 'otherAdmin':
      return scoped ? 404 : ok;
  }
}

describe('security: tokens, roles and namespaces', () => {
  let db: TestDatabase;
  let store: Store;
  let coordinator: CoordinatorProcess;
  const secrets = {} as Record<Caller, string | undefined>;
  let revokedId: string;

  async function token(namespace: string, role: TokenRole): Promise<{ id: string; secret: string }> {
    const created = await store.tokens.create({ namespace, role, name: `test ${role}` });
    return { id: created.token.id, secret: created.secret };
  }

  beforeAll(async () => {
    db = await createTestDatabase();
    store = db.createStore();
    secrets.none = undefined;
    secrets.garbage = 'kairos_not-a-real-token';
    secrets.reader = (await token(NS, 'reader')).secret;
    secrets.writer = (await token(NS, 'writer')).secret;
    secrets.admin = (await token(NS, 'admin')).secret;
    secrets.agent = (await token(NS, 'agent')).secret;
    secrets.otherWriter = (await token(OTHER_NS, 'writer')).secret;
    secrets.otherAdmin = (await token(OTHER_NS, 'admin')).secret;
    const revoked = await token(NS, 'admin');
    secrets.revoked = revoked.secret;
    revokedId = revoked.id;
    await store.tokens.revoke(revokedId);
    coordinator = await startCoordinatorProcess({ databaseUrl: db.url, auth: true, env: { KAIROS_AUTH_CACHE_MS: '300' } });
  }, 60_000);

  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });

  const admin = () => restClient(coordinator.httpUrl, secrets.admin);

  /** A fresh job of namespace alpha, far in the future (stays DUE). */
  async function alphaJob(): Promise<string> {
    const created = await admin().createJob({ task: 'sleep', runAt: new Date(Date.now() + 3_600_000).toISOString(), payload: { seconds: 1 } });
    expect(created.status).toBe(201);
    return created.body.jobId;
  }

  async function snapshot(): Promise<unknown> {
    const jobs = await db.pool.query('SELECT id, namespace, state, updated_at, next_run_at FROM jobs ORDER BY id');
    const tokens = await db.pool.query('SELECT id, revoked_at FROM tokens ORDER BY id');
    return { jobs: jobs.rows, tokens: tokens.rows };
  }

  interface Endpoint {
    name: string;
    need: Need;
    ok: number;
    /** True when the call names an alpha resource: another namespace gets 404. */
    scoped: boolean;
    call(api: ReturnType<typeof restClient>, jobId: string, tokenId: string): Promise<{ status: number; body: any }>;
  }

  const endpoints: Endpoint[] = [
    {
      name: 'POST /jobs',
      need: 'write',
      ok: 201,
      scoped: false,
      call: (api) => api.createJob({ task: 'sleep', runAt: new Date(Date.now() + 3_600_000).toISOString(), payload: { seconds: 1 } }),
    },
    {
      name: 'POST /jobs:batch',
      need: 'write',
      ok: 200,
      scoped: false,
      call: (api) => api.call('POST', '/jobs:batch', { jobs: [{ task: 'sleep', runAt: new Date(Date.now() + 3_600_000).toISOString(), payload: { seconds: 1 } }] }),
    },
    { name: 'GET /jobs/{id}', need: 'read', ok: 200, scoped: true, call: (api, id) => api.getJob(id) },
    { name: 'GET /jobs', need: 'read', ok: 200, scoped: false, call: (api) => api.listJobs() },
    { name: 'GET /jobs/{id}/runs', need: 'read', ok: 200, scoped: true, call: (api, id) => api.runs(id) },
    {
      name: 'PATCH /jobs/{id}',
      need: 'write',
      ok: 200,
      scoped: true,
      call: (api, id) => api.call('PATCH', `/jobs/${id}`, { name: 'renamed' }),
    },
    { name: 'DELETE /jobs/{id}', need: 'write', ok: 204, scoped: true, call: (api, id) => api.cancelJob(id) },
    // The job is DUE: a caller allowed to abort is told nothing is running (409), and nothing changes.
    { name: 'POST /jobs/{id}/abort', need: 'write', ok: 409, scoped: true, call: (api, id) => api.call('POST', `/jobs/${id}/abort`) },
    { name: 'POST /jobs/{id}/pause', need: 'write', ok: 200, scoped: true, call: (api, id) => api.control(id, 'pause') },
    { name: 'POST /jobs/{id}/resume', need: 'write', ok: 200, scoped: true, call: (api, id) => api.control(id, 'resume') },
    { name: 'POST /jobs/{id}/trigger', need: 'write', ok: 200, scoped: true, call: (api, id) => api.control(id, 'trigger') },
    // The job is one-off: a caller allowed to backfill is told it cannot be (409), and nothing changes.
    {
      name: 'POST /jobs/{id}/backfill',
      need: 'write',
      ok: 409,
      scoped: true,
      call: (api, id) => api.call('POST', `/jobs/${id}/backfill`, { from: '2020-01-01T00:00:00Z', to: '2020-01-02T00:00:00Z' }),
    },
    { name: 'DELETE /jobs/{id}/backfill', need: 'write', ok: 409, scoped: true, call: (api, id) => api.call('DELETE', `/jobs/${id}/backfill`) },
    { name: 'GET /jobs/{id}/upcoming', need: 'read', ok: 200, scoped: true, call: (api, id) => api.call('GET', `/jobs/${id}/upcoming`) },
    {
      name: 'POST /schedules/preview',
      need: 'read',
      ok: 200,
      scoped: false,
      call: (api) => api.call('POST', '/schedules/preview', { schedule: '0 * * * *' }),
    },
    { name: 'GET /agents', need: 'read', ok: 200, scoped: false, call: (api) => api.agents() },
    { name: 'GET /tokens', need: 'admin', ok: 200, scoped: false, call: (api) => api.call('GET', '/tokens') },
    { name: 'POST /tokens', need: 'admin', ok: 201, scoped: false, call: (api) => api.call('POST', '/tokens', { role: 'reader' }) },
    { name: 'DELETE /tokens/{id}', need: 'admin', ok: 204, scoped: true, call: (api, _id, tokenId) => api.call('DELETE', `/tokens/${tokenId}`) },
  ];
  const callers: Caller[] = ['none', 'garbage', 'revoked', 'reader', 'writer', 'admin', 'agent', 'otherWriter', 'otherAdmin'];

  describe.each(endpoints)('REST $name', (endpoint) => {
    it.each(callers)('as %s', async (caller) => {
      const jobId = await alphaJob();
      const victimToken = await token(NS, 'reader');
      const expected = expectedStatus(caller, endpoint.need, endpoint.ok, endpoint.scoped);
      const before = await snapshot();
      const response = await endpoint.call(restClient(coordinator.httpUrl, secrets[caller]), jobId, victimToken.id);
      expect({ caller, status: response.status }).toEqual({ caller, status: expected });
      if (expected >= 400) {
        const code = { 401: 'unauthenticated', 403: 'permission_denied', 404: 'not_found', 409: 'failed_precondition' }[expected as 401 | 403 | 404 | 409];
        expect(response.body.error.code).toBe(code);
        expect(await snapshot()).toEqual(before);
      }
    });
  });

  it('lists only the caller namespace’s jobs, and idempotency keys are per namespace', async () => {
    const alpha = await alphaJob();
    const beta = restClient(coordinator.httpUrl, secrets.otherWriter);
    const listed = (await beta.listJobs('?limit=1000')).body.jobs.map((job: { jobId: string }) => job.jobId);
    expect(listed).not.toContain(alpha);
    const body = { task: 'sleep', runAt: new Date(Date.now() + 3_600_000).toISOString(), payload: { seconds: 0 }, idempotencyKey: 'same-key' };
    const first = await admin().createJob(body);
    const second = await beta.createJob(body);
    expect([first.status, second.status]).toEqual([201, 201]);
    expect(second.body.jobId).not.toBe(first.body.jobId);
    expect(second.body.job.namespace).toBe(OTHER_NS);
  });

  it('an admin creates tokens for its own namespace only, and the secret works at once', async () => {
    const refused = await admin().call<any>('POST', '/tokens', { role: 'reader', namespace: OTHER_NS });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toMatchObject({ code: 'permission_denied', field: 'namespace' });
    const bad = await admin().call<any>('POST', '/tokens', { role: 'root' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.field).toBe('role');
    const created = await admin().call<any>('POST', '/tokens', { role: 'reader', name: 'ci', expiresInSeconds: 3600 });
    expect(created.status).toBe(201);
    expect(created.body.token).toMatchObject({ namespace: NS, role: 'reader', name: 'ci', revokedAt: null });
    expect((await restClient(coordinator.httpUrl, created.body.secret).listJobs()).status).toBe(200);
    const listed = await admin().call<any>('GET', '/tokens');
    expect(JSON.stringify(listed.body)).not.toContain(created.body.secret);
  });

  it('TokenService: an admin makes a working token for its own namespace only', async () => {
    const admin = createKairosClient({ address: coordinator.grpcAddress, token: secrets.admin });
    try {
      const created = await admin.createToken({ role: 'writer', name: 'over gRPC', expiresInSeconds: 600 });
      expect(created.token).toMatchObject({ namespace: NS, role: 'writer', name: 'over gRPC', revokedAt: null });
      expect(created.token.expiresAt).not.toBeNull();
      expect((await restClient(coordinator.httpUrl, created.secret).listJobs()).status).toBe(200);
      expect((await admin.listTokens()).map((t) => t.id)).toContain(created.token.id);
      const other = await admin.createToken({ role: 'reader', namespace: OTHER_NS }).then(
        () => 'created',
        (error: unknown) => KairosError.from(error).code,
      );
      expect(other).toBe('permission-denied');
      await admin.revokeToken(created.token.id);
      expect((await admin.listTokens()).find((t) => t.id === created.token.id)?.revokedAt).not.toBeNull();
      const missing = await admin.revokeToken('01900000-0000-7000-8000-000000000000').then(
        () => 'revoked',
        (error: unknown) => KairosError.from(error).code,
      );
      expect(missing).toBe('not-found');
    } finally {
      admin.close();
    }
  });

  it('a token revoked on one coordinator stops working on every coordinator within the cache time', async () => {
    const second = await startCoordinatorProcess({
      databaseUrl: db.url,
      auth: true,
      name: 'second-coordinator',
      env: { KAIROS_AUTH_CACHE_MS: '300' },
    });
    const created = await token(NS, 'reader');
    const onFirst = restClient(coordinator.httpUrl, created.secret);
    const onSecond = restClient(second.httpUrl, created.secret);
    // Both coordinators have the token cached as valid.
    expect((await onFirst.listJobs()).status).toBe(200);
    expect((await onSecond.listJobs()).status).toBe(200);
    expect((await admin().call('DELETE', `/tokens/${created.id}`)).status).toBe(204);
    await waitFor(async () => (await onFirst.listJobs()).status === 401 && (await onSecond.listJobs()).status === 401, {
      timeoutMs: 10_000,
      description: 'revocation to reach both coordinators',
    });
    await second.proc.stop();
  }, 60_000);

  describe('gRPC', () => {
    const clients: KairosClient[] = [];
    const client = (caller: Caller) => {
      const made = createKairosClient({ address: coordinator.grpcAddress, token: secrets[caller] });
      clients.push(made);
      return made;
    };
    afterAll(() => clients.forEach((c) => c.close()));

    /** `allowed`: the outcome for a caller the call is allowed to (default 'ok'). */
    const calls: Array<{
      name: string;
      need: Need;
      scoped: boolean;
      allowed?: string;
      call: (c: KairosClient, jobId: string, tokenId: string) => Promise<unknown>;
    }> = [
      { name: 'CreateJob', need: 'write', scoped: false, call: (c) => c.createJob({ task: 'sleep', runAt: new Date(Date.now() + 3_600_000), payload: { seconds: 0 } }) },
      { name: 'GetJob', need: 'read', scoped: true, call: (c, id) => c.getJob(id) },
      { name: 'ListJobs', need: 'read', scoped: false, call: (c) => c.listJobs() },
      { name: 'ListRuns', need: 'read', scoped: true, call: (c, id) => c.listRuns(id) },
      { name: 'CancelJob', need: 'write', scoped: true, call: (c, id) => c.cancelJob(id) },
      { name: 'UpdateJob', need: 'write', scoped: true, call: (c, id) => c.updateJob(id, { name: 'renamed' }) },
      { name: 'AbortRun', need: 'write', scoped: true, allowed: 'failed-precondition', call: (c, id) => c.abortRun(id) },
      { name: 'PauseJob', need: 'write', scoped: true, call: (c, id) => c.pauseJob(id) },
      { name: 'ResumeJob', need: 'write', scoped: true, call: (c, id) => c.resumeJob(id) },
      { name: 'TriggerJob', need: 'write', scoped: true, call: (c, id) => c.triggerJob(id) },
      { name: 'ListUpcoming', need: 'read', scoped: true, call: (c, id) => c.listUpcoming(id) },
      {
        name: 'StartBackfill',
        need: 'write',
        scoped: true,
        allowed: 'failed-precondition',
        call: (c, id) => c.startBackfill(id, { from: '2020-01-01T00:00:00Z', to: '2020-01-02T00:00:00Z' }),
      },
      { name: 'CancelBackfill', need: 'write', scoped: true, allowed: 'failed-precondition', call: (c, id) => c.cancelBackfill(id) },
      { name: 'PreviewSchedule', need: 'read', scoped: false, call: (c) => c.previewSchedule({ schedule: '0 * * * *' }) },
      { name: 'ListAgents', need: 'read', scoped: false, call: (c) => c.listAgents() },
      { name: 'CreateToken', need: 'admin', scoped: false, call: (c) => c.createToken({ role: 'reader' }) },
      { name: 'ListTokens', need: 'admin', scoped: false, call: (c) => c.listTokens() },
      { name: 'RevokeToken', need: 'admin', scoped: true, call: (c, _jobId, tokenId) => c.revokeToken(tokenId) },
    ];
    const CODE_FOR: Record<number, string> = { 401: 'unauthenticated', 403: 'permission-denied', 404: 'not-found' };

    describe.each(calls)('$name', (rpc) => {
      it.each(callers)('as %s', async (caller) => {
        const jobId = await alphaJob();
        const victimToken = await token(NS, 'reader');
        const expected = expectedStatus(caller, rpc.need, 200, rpc.scoped);
        const before = await snapshot();
        const outcome = await rpc.call(client(caller), jobId, victimToken.id).then(
          () => 'ok',
          (error: unknown) => KairosError.from(error).code,
        );
        expect({ caller, outcome }).toEqual({ caller, outcome: expected === 200 ? (rpc.allowed ?? 'ok') : CODE_FOR[expected] });
        if (expected !== 200) expect(await snapshot()).toEqual(before);
      });
    });
  });

  describe('agent streams', () => {
    it('refuses a stream without a valid agent token; serves an agent only jobs of its token’s namespace', async () => {
      const beforeAlpha = await alphaJob();
      const betaApi = restClient(coordinator.httpUrl, secrets.otherWriter);
      const now = new Date().toISOString();
      const alphaDue = await admin().createJob({ task: 'sleep', runAt: now, payload: { seconds: 0 } });
      const betaDue = await betaApi.createJob({ task: 'sleep', runAt: now, payload: { seconds: 0 } });

      const noToken = await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'anonymous-agent' });
      const refusedWith = (code: string) => (line: { msg?: string; reason?: unknown }) =>
        line.msg === 'could not connect to the coordinator' && String(line.reason).includes(code);
      await noToken.waitForLine(refusedWith('UNAUTHENTICATED'), 15_000);
      const writerAsAgent = await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'writer-agent', env: { KAIROS_TOKEN: secrets.writer! } });
      await writerAsAgent.waitForLine(refusedWith('PERMISSION_DENIED'), 15_000);

      await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'alpha-agent', env: { KAIROS_TOKEN: secrets.agent! } });
      await waitFor(async () => (await admin().getJob(alphaDue.body.jobId)).body.state === 'COMPLETED', {
        timeoutMs: 15_000,
        description: 'the alpha job to run',
      });
      const agents = (await admin().agents()).body;
      expect(agents.map((a: { agentId: string; namespace: string }) => [a.agentId, a.namespace])).toEqual([['alpha-agent', NS]]);
      // The beta admin sees no agents: they are alpha's.
      expect((await restClient(coordinator.httpUrl, secrets.otherAdmin).agents()).body).toEqual([]);
      // The beta job is due, and stays due: no alpha agent may take it.
      const beta = (await betaApi.getJob(betaDue.body.jobId)).body;
      expect(beta.state).toBe('DUE');
      const { rows } = await db.pool.query('SELECT count(*)::int AS n FROM runs WHERE job_id = $1', [betaDue.body.jobId]);
      expect(rows[0].n).toBe(0);
      expect((await admin().getJob(beforeAlpha)).body.state).toBe('DUE');
      await noToken.stop();
      await writerAsAgent.stop();
    }, 60_000);

    it('ends the stream of an agent whose token is revoked', async () => {
      const agentToken = await token(NS, 'agent');
      const agent = await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'soon-revoked', env: { KAIROS_TOKEN: agentToken.secret } });
      await waitFor(async () => (await admin().agents()).body.some((a: { agentId: string }) => a.agentId === 'soon-revoked'), {
        description: 'agent connected',
      });
      await store.tokens.revoke(agentToken.id);
      await coordinator.proc.waitForLine(
        (line) => line.msg === 'closing agent stream' && line.code === grpc.status.UNAUTHENTICATED,
        15_000,
      );
      await waitFor(async () => !(await admin().agents()).body.some((a: { agentId: string }) => a.agentId === 'soon-revoked'), {
        description: 'agent gone from the list',
      });
      await agent.stop();
    }, 40_000);
  });
});
