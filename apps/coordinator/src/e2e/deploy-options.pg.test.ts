/**
 * What the Helm chart relies on, with real processes:
 * - KAIROS_MIGRATE=false: on an empty database the coordinator runs no DDL
 *   and does not serve; it waits, saying why, until `kairos migrate` (the
 *   chart's hook Job, with its own credentials) has applied the schema, then
 *   serves without applying anything itself;
 * - kairos_jobs_demand, the autoscaling gauge: DUE jobs within the horizon
 *   and the jobs running now, per namespace and task; a job further out than
 *   the horizon does not count, and a running job counts until it ends.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  COORDINATOR_MAIN,
  createTestDatabase,
  metricValue,
  restClient,
  spawnNode,
  startAgentProcess,
  startCoordinatorProcess,
  startHeldCalls,
  stopAll,
  waitFor,
  type TestDatabase,
} from '@kairos/testing';

const CLI = path.resolve(__dirname, '../../../cli/bin/kairos.js');

describe('deployment options', () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });

  test('KAIROS_MIGRATE=false waits for `kairos migrate` and never applies a migration itself', async () => {
    await db.pool.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public');
    const coordinator = spawnNode('no-ddl', COORDINATOR_MAIN, {
      DATABASE_URL: db.url,
      KAIROS_HOST: '127.0.0.1',
      KAIROS_HTTP_PORT: '0',
      KAIROS_GRPC_PORT: '0',
      KAIROS_INSECURE: 'true',
      KAIROS_MIGRATE: 'false',
      KAIROS_COORDINATOR_ID: 'no-ddl',
    });
    const waiting = await coordinator.waitForLine((line) => String(line.msg).includes('KAIROS_MIGRATE=false'), 30_000);
    expect(waiting.pending).toEqual(expect.arrayContaining(['0001_initial', '0012_coordinator_presence']));
    expect((await db.pool.query(`SELECT to_regclass('jobs') AS jobs`)).rows[0].jobs).toBeNull();
    expect(coordinator.lines.some((line) => line.msg === 'coordinator ready')).toBe(false);

    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'migrate', '--json'], { env: { ...process.env, DATABASE_URL: db.url } });
    expect(JSON.parse(stdout).applied).toEqual(expect.arrayContaining(['0001_initial']));
    const ready = await coordinator.waitForLine((line) => line.msg === 'coordinator ready', 30_000);
    expect((await fetch(`${String(ready.httpUrl)}/readyz`)).status).toBe(200);
    expect(coordinator.lines.some((line) => line.msg === 'migrations applied')).toBe(false);
    expect(await coordinator.stop()).toBe(0);
  }, 90_000);

  test('kairos_jobs_demand counts jobs due within the horizon and jobs running, per task', async () => {
    const held = await startHeldCalls();
    try {
      const coordinator = await startCoordinatorProcess({ databaseUrl: db.url, name: 'demand', env: { KAIROS_DEMAND_HORIZON_MS: '600000' } });
      const api = restClient(coordinator.httpUrl);
      const demand = (task: string) => metricValue(coordinator.httpUrl, 'kairos_jobs_demand', { namespace: 'default', task });
      const inMinutes = (minutes: number) => new Date(Date.now() + minutes * 60_000).toISOString();
      await api.createJob({ task: 'report', runAt: inMinutes(5) });
      await api.createJob({ task: 'report', runAt: inMinutes(9) });
      await api.createJob({ task: 'report', runAt: inMinutes(60) }); // past the ten-minute horizon
      await waitFor(async () => (await demand('report')) === 2, { timeoutMs: 10_000, description: 'two report jobs in demand' });

      await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'demand-agent', tasks: 'http' });
      const job = (await api.createJob({ task: 'http', runAt: new Date().toISOString(), payload: { url: held.url() } })).body.jobId as string;
      await held.arrived();
      // Running, so no longer DUE: still demand.
      expect((await api.getJob(job)).body.state).toBe('CLAIMED');
      await waitFor(async () => (await demand('http')) === 1, { timeoutMs: 10_000, description: 'the running job in demand' });
      held.release();
      await waitFor(async () => (await api.getJob(job)).body.state === 'COMPLETED', { timeoutMs: 15_000, description: 'the held job COMPLETED' });
      await waitFor(async () => (await demand('http')) === 0, { timeoutMs: 10_000, description: 'no http demand once it ended' });
      expect(await demand('report')).toBe(2);
    } finally {
      await held.close();
    }
  }, 90_000);
});
