/**
 * The Python and Go clients (clients/python, clients/go) run their scenario
 * lists against a real coordinator with tokens on and a real agent: pytest
 * and `go test`, in their own processes, with the coordinator's address and
 * tokens in their environment. Their generated stubs must match proto/.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase, makeTestPki, startAgentProcess, startCoordinatorProcess, stopAll, type TestDatabase } from '@kairos/testing';
import { clientEnv, expectPassed, ROOT, runToEnd, type ClientEnv } from './client-env';

const NAMESPACE = 'clients';

describe('Python and Go clients against a live coordinator', () => {
  let db: TestDatabase;
  let env: ClientEnv;
  let scenarioEnv: Record<string, string>;
  let pkiDir: string;

  beforeAll(async () => {
    env = await clientEnv();
    db = await createTestDatabase();
    const store = db.createStore();
    const token = async (namespace: string, role: 'writer' | 'agent') => (await store.tokens.create({ namespace, role, name: `clients ${role}` })).secret;
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url, auth: true });
    await startAgentProcess({
      coordinator: coordinator.grpcAddress,
      agentId: 'clients-agent',
      tasks: 'sleep',
      env: { KAIROS_TOKEN: await token(NAMESPACE, 'agent') },
    });
    // A second coordinator on the same store, with TLS and client certificates required (mTLS).
    pkiDir = mkdtempSync(path.join(os.tmpdir(), 'kairos-clients-tls-'));
    const pki = makeTestPki(pkiDir);
    const tls = await startCoordinatorProcess({
      databaseUrl: db.url,
      auth: true,
      name: 'tls-coordinator',
      env: { KAIROS_TLS_CERT: pki.serverCert, KAIROS_TLS_KEY: pki.serverKey, KAIROS_TLS_CLIENT_CA: pki.caCert },
    });
    scenarioEnv = {
      KAIROS_TLS_COORDINATOR: tls.grpcAddress,
      KAIROS_TLS_CA: pki.caCert,
      KAIROS_TLS_CLIENT_CERT: pki.clientCert,
      KAIROS_TLS_CLIENT_KEY: pki.clientKey,
      KAIROS_COORDINATOR: coordinator.grpcAddress,
      KAIROS_TOKEN: await token(NAMESPACE, 'writer'),
      KAIROS_OTHER_TOKEN: await token('elsewhere', 'writer'),
    };
  }, 15 * 60_000);

  afterAll(async () => {
    await stopAll();
    await db?.drop();
    if (pkiDir) rmSync(pkiDir, { recursive: true, force: true });
  });

  test('the generated Python and Go stubs match proto/', async () => {
    expectPassed('generate-clients --check', await runToEnd(process.execPath, ['tools/scripts/generate-clients.mjs', '--check']));
  }, 5 * 60_000);

  test('Python: pytest runs the scenario list', async () => {
    const finished = await runToEnd(`${env.bin}/pytest`, ['-q', '-p', 'no:cacheprovider', 'tests'], {
      cwd: `${ROOT}/clients/python`,
      env: { ...scenarioEnv, PYTHONDONTWRITEBYTECODE: '1' },
    });
    expectPassed('pytest', finished);
    expect(finished.output).toMatch(/\b12 passed\b/);
  }, 5 * 60_000);

  test('Go: go test runs the scenario list', async () => {
    const finished = await runToEnd('go', ['test', '-count=1', '-v', './...'], { cwd: `${ROOT}/clients/go`, env: scenarioEnv });
    expectPassed('go test', finished);
    expect(finished.output.match(/^--- PASS/gm)?.length).toBe(12);
  }, 10 * 60_000);
});
