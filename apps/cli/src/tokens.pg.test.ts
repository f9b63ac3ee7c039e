/**
 * `kairos tokens` against a real database (DATABASE_URL) and, without one,
 * through a real coordinator with an admin token.
 */
import { createTestDatabase, restClient, startCoordinatorProcess, stopAll, type CoordinatorProcess, type TestDatabase } from '@kairos/testing';
import { runCli } from './run';
import { capturedIo } from './test-support/captured-io';

describe('kairos tokens', () => {
  let db: TestDatabase;
  let coordinator: CoordinatorProcess;

  beforeAll(async () => {
    db = await createTestDatabase();
    coordinator = await startCoordinatorProcess({ databaseUrl: db.url, auth: true });
  }, 60_000);
  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });

  async function kairos(argv: string[], env: Record<string, string> = {}) {
    const captured = capturedIo({ KAIROS_DATA_DIR: '/nonexistent-kairos-dir', ...env });
    const code = await runCli(argv, captured.io);
    return { code, stdout: captured.stdout(), stderr: captured.stderr() };
  }

  it('with DATABASE_URL: creates (the secret as the only stdout line), lists without secrets, revokes', async () => {
    const env = { DATABASE_URL: db.url };
    const created = await kairos(['tokens', 'create', '--namespace', 'ops', '--role', 'admin', '--name', 'first', '--expires', '30d'], env);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    const secret = created.stdout.trim();
    expect(created.stdout).toBe(`${secret}\n`);
    expect(secret).toMatch(/^kairos_[A-Za-z0-9_-]{43}$/);
    expect((await restClient(coordinator.httpUrl, secret).call('GET', '/tokens')).status).toBe(200);

    const listed = await kairos(['tokens', 'list', '--namespace', 'ops', '--json'], env);
    // The shape GET /tokens answers.
    const { tokens } = JSON.parse(listed.stdout) as { tokens: Array<{ id: string; name: string; role: string; expiresAt: string | null }> };
    expect(tokens).toEqual([expect.objectContaining({ name: 'first', role: 'admin', expiresAt: expect.any(String) })]);
    expect(listed.stdout).not.toContain(secret);

    const human = await kairos(['tokens', 'list'], env);
    expect(human.stdout.split('\n')[0]).toMatch(/^ID\s+NAMESPACE\s+ROLE\s+NAME\s+CREATED\s+EXPIRES\s+REVOKED$/);

    expect(await kairos(['tokens', 'revoke', tokens[0]!.id], env)).toMatchObject({ code: 0, stdout: `revoked ${tokens[0]!.id}\n` });
    expect((await kairos(['tokens', 'revoke', tokens[0]!.id], env)).stdout).toBe(`${tokens[0]!.id} was already revoked\n`);
    expect((await kairos(['tokens', 'revoke', '01900000-0000-7000-8000-000000000000'], env)).code).toBe(3);
  });

  it('refuses bad flags naming them, before touching anything', async () => {
    const env = { DATABASE_URL: db.url };
    expect(await kairos(['tokens', 'create', '--namespace', 'ops', '--role', 'root'], env)).toMatchObject({ code: 2 });
    expect((await kairos(['tokens', 'create', '--namespace', 'ops', '--role', 'root'], env)).stderr).toContain('--role');
    expect((await kairos(['tokens', 'create', '--namespace', 'ops', '--role', 'reader', '--expires', 'soon'], env)).stderr).toContain('--expires');
    expect((await kairos(['tokens', 'create', '--namespace', 'a b', '--role', 'reader'], env)).stderr).toContain('--namespace');
    expect(await kairos(['tokens', 'create', '--role', 'reader'], env)).toMatchObject({ code: 2 });
    expect((await db.pool.query(`SELECT count(*)::int AS n FROM tokens WHERE name IS NULL`)).rows[0].n).toBe(0);
  });

  it('without DATABASE_URL: goes through the coordinator with an admin token, for that namespace only', async () => {
    const admin = (await kairos(['tokens', 'create', '--namespace', 'team', '--role', 'admin'], { DATABASE_URL: db.url })).stdout.trim();
    const viaApi = { KAIROS_COORDINATOR: coordinator.grpcAddress, KAIROS_TOKEN: admin };
    const made = await kairos(['tokens', 'create', '--role', 'writer', '--name', 'ci', '--json'], viaApi);
    expect(made.code).toBe(0);
    // The shape POST /tokens answers.
    const body = JSON.parse(made.stdout) as { id: string; secret: string; token: { id: string; namespace: string } };
    expect([body.token.namespace, body.token.id]).toEqual(['team', body.id]);
    expect((await restClient(coordinator.httpUrl, body.secret).listJobs()).status).toBe(200);
    const listed = JSON.parse((await kairos(['tokens', 'list', '--json'], viaApi)).stdout) as { tokens: Array<{ namespace: string }> };
    expect(new Set(listed.tokens.map((t) => t.namespace))).toEqual(new Set(['team']));
    expect((await kairos(['tokens', 'create', '--role', 'reader', '--namespace', 'ops'], viaApi)).code).toBe(1); // permission denied
    expect((await kairos(['tokens', 'revoke', body.id], viaApi)).code).toBe(0);
    const reader = (await kairos(['tokens', 'create', '--namespace', 'team', '--role', 'reader'], { DATABASE_URL: db.url })).stdout.trim();
    const refused = await kairos(['tokens', 'list'], { ...viaApi, KAIROS_TOKEN: reader });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('admin token');
  });
});
