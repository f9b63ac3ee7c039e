/**
 * W8: bulk create through each system's public API, into an empty database.
 *
 * Kairos: the coordinator's REST `POST /jobs:batch` and gRPC `CreateJobs`
 * (libs/client), 1,000 jobs per call, `clients` calls in flight. Peers have no
 * server: their client libraries write to PostgreSQL themselves, with their
 * bulk calls at the same batch size (graphile-worker `addJobs`, pg-boss
 * `insert`). Jobs are one-off, due in the future (nothing runs), each with a
 * small payload. The figure is jobs per second from the first call to the last
 * answer.
 */
import { createKairosClient } from '@kairos/client';
import { makeWorkerUtils } from 'graphile-worker';
import PgBoss from 'pg-boss';
import { Pool } from 'pg';
import { TASK_NOOP, type SystemKey } from './common';
import { createDatabase, dropDatabase } from './cluster';
import type { BenchContext } from './workloads';
import { restClient, startCoordinatorProcess } from '@kairos/testing';

export interface W8Result {
  /** What created the jobs, e.g. `REST POST /jobs:batch`. */
  via: string;
  jobs: number;
  batchSize: number;
  clients: number;
  seconds: number;
  jobsPerSec: number;
}

const BATCH = 1000;

/** Runs `send(batchIndex, size)` for every batch of `total`, with `clients` in flight; seconds taken. */
async function drive(total: number, clients: number, send: (batch: number, size: number) => Promise<void>): Promise<number> {
  const batches = Math.ceil(total / BATCH);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let batch = next++; batch < batches; batch = next++) {
        await send(batch, Math.min(BATCH, total - batch * BATCH));
      }
    }),
  );
  return (performance.now() - started) / 1000;
}

/** The jobs of one batch: due one to two days ahead, so nothing runs. */
function dueTimes(size: number): number[] {
  const base = Date.now() + 86_400_000;
  return Array.from({ length: size }, () => base + Math.floor(Math.random() * 86_400_000));
}

function result(via: string, jobs: number, clients: number, seconds: number): W8Result {
  return { via, jobs, batchSize: BATCH, clients, seconds: Math.round(seconds * 100) / 100, jobsPerSec: Math.round(jobs / seconds) };
}

export async function runW8(ctx: BenchContext, system: SystemKey): Promise<W8Result[]> {
  const { jobs, clients } = ctx.sizes.w8;
  const driver = ctx.drivers[system];
  const results: W8Result[] = [];
  const measure = async (name: string, body: (url: string) => Promise<W8Result>) => {
    const db = `b_w8_${name}`;
    const url = await createDatabase(ctx.cluster, db);
    try {
      await driver.prepare(url);
      const figure = await body(url);
      ctx.log(`  W8 ${system} ${figure.via}: ${figure.jobs} jobs in ${figure.seconds} s = ${figure.jobsPerSec} jobs/s`);
      results.push(figure);
    } finally {
      await dropDatabase(ctx.cluster, db);
    }
  };

  if (system === 'kairos') {
    for (const transport of ['rest', 'grpc'] as const) {
      await measure(`kairos_${transport}`, async (url) => {
        const coordinator = await startCoordinatorProcess({ databaseUrl: url, name: `w8-${transport}-coordinator` });
        const client = createKairosClient({ address: coordinator.grpcAddress, deadlineMs: 60_000 });
        const rest = restClient(coordinator.httpUrl);
        try {
          const seconds = await drive(jobs, clients, async (batch, size) => {
            const due = dueTimes(size);
            if (transport === 'rest') {
              const created = due.map((d, i) => ({ task: TASK_NOOP, runAt: new Date(d).toISOString(), payload: { p: 8, d, i: batch * BATCH + i } }));
              const answer = await rest.call<{ results?: Array<{ status: number }> } | undefined>('POST', '/jobs:batch', { jobs: created });
              if (answer.status !== 200 || answer.body?.results?.some((r) => r.status !== 201)) throw new Error(`POST /jobs:batch answered ${answer.status}`);
              return;
            }
            const answers = await client.createJobs(due.map((d, i) => ({ task: TASK_NOOP, runAt: new Date(d), payload: { p: 8, d, i: batch * BATCH + i } })));
            const refused = answers.find((answer) => answer.error !== null);
            if (refused?.error) throw refused.error;
          });
          return result(transport === 'rest' ? 'REST POST /jobs:batch' : 'gRPC CreateJobs (libs/client)', jobs, clients, seconds);
        } finally {
          client.close();
          await coordinator.proc.stop(10_000);
        }
      });
    }
  } else if (system === 'graphile-worker') {
    await measure('graphile', async (url) => {
      // Our own pool, ended here, with an error listener: the forced DROP DATABASE after the run must not crash the bench.
      const pool = new Pool({ connectionString: url, max: clients });
      pool.on('error', () => undefined);
      const utils = await makeWorkerUtils({ pgPool: pool });
      try {
        const seconds = await drive(jobs, clients, async (batch, size) => {
          await utils.addJobs(dueTimes(size).map((d, i) => ({ identifier: TASK_NOOP, payload: { p: 8, d, i: batch * BATCH + i }, runAt: new Date(d) })));
        });
        return result('WorkerUtils.addJobs', jobs, clients, seconds);
      } finally {
        await utils.release();
        await pool.end();
      }
    });
  } else {
    await measure('pgboss', async (url) => {
      const boss = new PgBoss({ connectionString: url, supervise: false, schedule: false, max: clients });
      boss.on('error', () => undefined);
      await boss.start();
      try {
        const seconds = await drive(jobs, clients, async (batch, size) => {
          await boss.insert(dueTimes(size).map((d, i) => ({ name: TASK_NOOP, data: { p: 8, d, i: batch * BATCH + i }, startAfter: new Date(d).toISOString() })));
        });
        return result('boss.insert', jobs, clients, seconds);
      } finally {
        await boss.stop({ graceful: false, wait: true });
      }
    });
  }
  return results;
}
