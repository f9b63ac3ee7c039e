/**
 * The database goes away and comes back: nothing runs meanwhile (nothing can be
 * claimed), nothing is lost (next_run_at is durable), and everything that fell
 * due runs afterwards, late. Uses a private PostgreSQL that only this file
 * stops and starts (libs/testing/bin/pg-controller.mjs).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { Pool } from 'pg';
import { restClient, startAgentProcess, startCoordinatorProcess, stopAll, waitFor } from '@kairos/testing';

const CONTROLLER = path.resolve(__dirname, '../../../../libs/testing/bin/pg-controller.mjs');

interface PgEvent {
  state: 'running' | 'stopped';
  url: string;
  pid: number;
}

describe('database outage', () => {
  let dataDir: string;
  let controller: ChildProcess;
  const events: PgEvent[] = [];

  function nextEvent(state: PgEvent['state'], after: number): Promise<PgEvent> {
    return waitFor(() => events.slice(after).find((e) => e.state === state), {
      timeoutMs: 30_000,
      description: `private PostgreSQL ${state}`,
    });
  }

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'kairos-outage-'));
    controller = spawn(process.execPath, [CONTROLLER, dataDir], { stdio: ['pipe', 'pipe', 'pipe'] });
    readline.createInterface({ input: controller.stdout! }).on('line', (line) => events.push(JSON.parse(line) as PgEvent));
    await nextEvent('running', 0);
  }, 60_000);

  afterAll(async () => {
    await stopAll();
    if (controller.exitCode === null) {
      controller.stdin!.end('exit\n');
      await new Promise((resolve) => controller.on('exit', resolve));
    }
    await rm(dataDir, { recursive: true, force: true });
  });

  it('runs nothing while the database is down and everything due once it is back', async () => {
    const url = events[0]!.url;
    const coordinator = await startCoordinatorProcess({ databaseUrl: url, leaseMs: 1_500 });
    const api = restClient(coordinator.httpUrl);
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'outage-agent', capacity: 8 });
    await waitFor(async () => (await api.agents()).body.length === 1, { description: 'agent connected' });

    const dueAt = new Date(Date.now() + 1_000);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await api.createJob({ task: 'sleep', runAt: dueAt.toISOString(), payload: { seconds: 0.05 } })).body.jobId);
    }

    const seen = events.length;
    controller.stdin!.write('stop\n');
    await nextEvent('stopped', seen);
    const downAt = Date.now();

    // While it is down: the coordinator says it is not ready and refuses writes with 503.
    await waitFor(async () => (await api.call('GET', '/readyz')).status === 503, { description: 'readyz 503' });
    const refused = await api.createJob({ task: 'sleep', runAt: new Date().toISOString(), payload: { seconds: 0 } });
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('unavailable');
    // Reads too: 503, not 500 (found by tools/chaos).
    expect((await api.getJob(ids[0]!)).status).toBe(503);
    expect((await api.runs(ids[0]!)).status).toBe(503);
    // Stay down past the jobs' due time.
    await waitFor(() => Date.now() > dueAt.getTime() + 1_000, { description: 'past the due time' });

    const before = events.length;
    controller.stdin!.write('start\n');
    await nextEvent('running', before);
    const upAt = Date.now();

    const pool = new Pool({ connectionString: url, max: 1 });
    try {
      await waitFor(
        async () => {
          const { rows } = await pool.query(`SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[]) AND state = 'COMPLETED'`, [ids]);
          return rows[0].n === ids.length;
        },
        { timeoutMs: 20_000, description: 'every due job to run after the outage' },
      );
      const { rows } = await pool.query(`SELECT job_id, started_at, outcome FROM runs WHERE job_id = ANY($1::uuid[])`, [ids]);
      expect(rows).toHaveLength(ids.length);
      for (const run of rows) {
        expect(run.outcome).toBe('SUCCEEDED');
        // Late, never during the outage.
        expect(run.started_at.getTime()).toBeGreaterThanOrEqual(upAt - 1_000);
        expect(run.started_at.getTime()).toBeGreaterThan(downAt);
      }
      const { rows: all } = await pool.query('SELECT count(*)::int AS n FROM jobs');
      expect(all[0].n).toBe(ids.length); // the refused create wrote nothing
    } finally {
      await pool.end();
    }
  }, 90_000);
});
