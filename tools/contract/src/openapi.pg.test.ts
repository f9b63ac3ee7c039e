/**
 * The REST API against its own OpenAPI document: GET /openapi.json is the
 * committed docs/openapi.json, and schemathesis (from PyPI) fuzzes a live
 * coordinator from it — no 5xx, every status, content type, header and body
 * as documented, invalid input refused, 405 for undeclared methods.
 *
 * Two checks are left out, on purpose:
 * - positive_data_acceptance: a schema-valid request may still be refused
 *   (a cron expression JSON Schema cannot judge, a `to` before `from`);
 * - use_after_free: DELETE /jobs/{id} cancels and the job stays readable
 *   (state CANCELLED, with its history), by design.
 * revokeToken is not fuzzed: it would revoke the fuzzer's own token.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTestDatabase, startCoordinatorProcess, stopAll, type TestDatabase } from '@kairos/testing';
import { clientEnv, expectPassed, ROOT, runToEnd, type ClientEnv } from './client-env';

describe('the OpenAPI document', () => {
  let db: TestDatabase;
  let env: ClientEnv;
  let httpUrl: string;
  let admin: string;

  beforeAll(async () => {
    env = await clientEnv();
    db = await createTestDatabase();
    admin = (await db.createStore().tokens.create({ namespace: 'fuzz', role: 'admin', name: 'schemathesis' })).secret;
    ({ httpUrl } = await startCoordinatorProcess({ databaseUrl: db.url, auth: true }));
  }, 15 * 60_000);

  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });

  test('GET /openapi.json serves the committed docs/openapi.json, without a token', async () => {
    const response = await fetch(`${httpUrl}/openapi.json`);
    expect(response.status).toBe(200);
    const committed = JSON.parse(await readFile(`${ROOT}/docs/openapi.json`, 'utf8')) as Record<string, unknown>;
    expect(await response.json()).toEqual(committed);
  });

  test('schemathesis finds no server error and no response outside the document', async () => {
    // Its example database (.hypothesis) goes to a folder of its own.
    const cwd = await mkdtemp(path.join(os.tmpdir(), 'kairos-schemathesis-'));
    const finished = await runToEnd(
      `${env.bin}/st`,
      [
        'run',
        `${httpUrl}/openapi.json`,
        '--header',
        `Authorization: Bearer ${admin}`,
        '--checks',
        'all',
        '--exclude-checks',
        'positive_data_acceptance,use_after_free',
        '--exclude-operation-id',
        'revokeToken',
        '--max-examples',
        '60',
        '--seed',
        '20261201',
        '--workers',
        '1',
        '--no-color',
      ],
      { cwd, env: { PYTHONDONTWRITEBYTECODE: '1' } },
    );
    await rm(cwd, { recursive: true, force: true });
    expectPassed('schemathesis', finished);
    expect(finished.output).toMatch(/\d+ passed/);
  }, 10 * 60_000);
});
