/**
 * TLS and mTLS end to end, with certificates made for this run: the CLI and an
 * agent (real processes) over TLS, refusals for an untrusted CA and for a
 * missing client certificate, and a certificate replaced on disk being served
 * without a restart.
 */
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Store } from '@kairos/store';
import {
  createTestDatabase,
  makeTestPki,
  startAgentProcess,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type CoordinatorProcess,
  type TestDatabase,
  type TestPki,
} from '@kairos/testing';

const CLI = path.resolve(__dirname, '..', '..', '..', 'cli', 'bin', 'kairos.js');
const run = promisify(execFile);

/** GET over https trusting `ca`; resolves with the status, rejects on a TLS failure. */
function httpsGet(url: string, ca: string, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = https.get(url, { agent: false, ca: readFileSync(ca), headers: { authorization: `Bearer ${token}` } }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('error', reject);
  });
}

describe('TLS and mTLS', () => {
  let db: TestDatabase;
  let store: Store;
  let dir: string;
  let pki: TestPki;
  let other: TestPki;
  let serving: { cert: string; key: string };
  let coordinator: CoordinatorProcess;
  let writer: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = db.createStore();
    dir = mkdtempSync(path.join(os.tmpdir(), 'kairos-tls-'));
    pki = makeTestPki(path.join(dir, 'main'), 'main');
    other = makeTestPki(path.join(dir, 'other'), 'other');
    // The coordinator serves these paths; the reload test overwrites them.
    serving = { cert: path.join(dir, 'serving.crt'), key: path.join(dir, 'serving.key') };
    copyFileSync(pki.serverCert, serving.cert);
    copyFileSync(pki.serverKey, serving.key);
    writer = (await store.tokens.create({ namespace: 'default', role: 'writer' })).secret;
    coordinator = await startCoordinatorProcess({
      databaseUrl: db.url,
      auth: true,
      env: {
        KAIROS_TLS_CERT: serving.cert,
        KAIROS_TLS_KEY: serving.key,
        KAIROS_TLS_CLIENT_CA: pki.caCert,
        KAIROS_TLS_RELOAD_MS: '200',
      },
    });
  }, 60_000);

  afterAll(async () => {
    await stopAll();
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const cli = (args: string[], env: Record<string, string> = {}) =>
    run(process.execPath, [CLI, '--address', coordinator.grpcAddress, ...args], {
      env: { PATH: process.env.PATH ?? '', KAIROS_TOKEN: writer, KAIROS_DATA_DIR: dir, ...env },
    }).then(
      (result) => ({ code: 0, stdout: result.stdout, stderr: result.stderr }),
      (error: { code: number; stdout: string; stderr: string }) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr }),
    );

  it('serves REST over https and refuses a client that does not trust its CA', async () => {
    expect(coordinator.httpUrl).toMatch(/^https:/);
    expect(await httpsGet(`${coordinator.httpUrl}/jobs`, pki.caCert, writer)).toBe(200);
    await expect(httpsGet(`${coordinator.httpUrl}/jobs`, other.caCert, writer)).rejects.toThrow(/certificate/i);
  });

  it('the CLI works over mTLS, and is refused without a client certificate or with an untrusted CA', async () => {
    const mtls = ['--ca', pki.caCert, '--tls-cert', pki.clientCert, '--tls-key', pki.clientKey];
    const ok = await cli([...mtls, 'jobs', 'list', '--json']);
    expect(ok).toMatchObject({ code: 0 });
    expect(JSON.parse(ok.stdout)).toMatchObject({ jobs: [] });
    // KAIROS_TLS_CA from the environment works the same as --ca.
    expect(await cli(['--tls-cert', pki.clientCert, '--tls-key', pki.clientKey, 'jobs', 'list'], { KAIROS_TLS_CA: pki.caCert })).toMatchObject({ code: 0 });

    const noClientCert = await cli(['--ca', pki.caCert, 'jobs', 'list']);
    expect(noClientCert.code).toBe(1);
    const untrusted = await cli(['--ca', other.caCert, '--tls-cert', pki.clientCert, '--tls-key', pki.clientKey, 'jobs', 'list']);
    expect(untrusted.code).toBe(1);
    const foreignClient = await cli(['--ca', pki.caCert, '--tls-cert', other.clientCert, '--tls-key', other.clientKey, 'jobs', 'list']);
    expect(foreignClient.code).toBe(1);
    const plaintext = await cli(['jobs', 'list']);
    expect(plaintext.code).toBe(1);
  }, 30_000);

  it('an agent connects over mTLS and runs a job; without its client certificate it cannot connect', async () => {
    const agentToken = (await store.tokens.create({ namespace: 'default', role: 'agent' })).secret;
    const refused = await startAgentProcess({
      coordinator: coordinator.grpcAddress,
      agentId: 'no-client-cert',
      env: { KAIROS_TOKEN: agentToken, KAIROS_TLS_CA: pki.caCert },
    });
    await refused.waitForLine((line) => line.msg === 'could not connect to the coordinator', 15_000);
    await refused.stop();

    await startAgentProcess({
      coordinator: coordinator.grpcAddress,
      agentId: 'mtls-agent',
      env: { KAIROS_TOKEN: agentToken, KAIROS_TLS_CA: pki.caCert, KAIROS_TLS_CLIENT_CERT: pki.clientCert, KAIROS_TLS_CLIENT_KEY: pki.clientKey },
    });
    const created = await cli(['--ca', pki.caCert, '--tls-cert', pki.clientCert, '--tls-key', pki.clientKey, 'jobs', 'create', '--task', 'sleep', '--payload', '{"seconds":0}', '--run-at', new Date().toISOString().replace(/\.\d+Z$/, 'Z'), '--json']);
    expect(created.code).toBe(0);
    const jobId = JSON.parse(created.stdout).jobId as string;
    await waitFor(
      async () => {
        const { rows } = await db.pool.query(`SELECT state FROM jobs WHERE id = $1`, [jobId]);
        return rows[0]?.state === 'COMPLETED';
      },
      { timeoutMs: 15_000, description: 'the job to run on the mTLS agent' },
    );
    const { rows } = await db.pool.query(`SELECT worker_id, outcome FROM runs WHERE job_id = $1`, [jobId]);
    expect(rows).toEqual([{ worker_id: 'mtls-agent', outcome: 'SUCCEEDED' }]);
  }, 40_000);

  it('serves a certificate replaced on disk without a restart', async () => {
    // Swap in a server certificate from the other CA: once reloaded, clients trusting only that CA get through.
    copyFileSync(other.serverKey, serving.key);
    copyFileSync(other.serverCert, serving.cert);
    await waitFor(async () => (await httpsGet(`${coordinator.httpUrl}/jobs`, other.caCert, writer).catch(() => 0)) === 200, {
      timeoutMs: 10_000,
      description: 'REST to serve the new certificate',
    });
    await expect(httpsGet(`${coordinator.httpUrl}/jobs`, pki.caCert, writer)).rejects.toThrow();
    // gRPC too (client certificates are still checked against the main CA).
    await waitFor(
      async () => (await cli(['--ca', other.caCert, '--tls-cert', pki.clientCert, '--tls-key', pki.clientKey, 'jobs', 'list'])).code === 0,
      { timeoutMs: 10_000, description: 'gRPC to serve the new certificate' },
    );
  }, 30_000);
});
