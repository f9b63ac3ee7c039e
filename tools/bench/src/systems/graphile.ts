/**
 * graphile-worker 0.17 in worker processes (peer-worker.ts), at its defaults
 * and at the tuning its performance page documents.
 */
import { Logger, makeWorkerUtils, run, runMigrations, type WorkerUtils } from 'graphile-worker';
import { Pool, type PoolClient } from 'pg';
import { TASK_NOOP } from '../common';
import { withClient } from '../cluster';
import { startWorkers } from '../procs';
import type { GraphileWorkerOptions } from '../peer-worker';
import type { Driver, RunningSystem, StartOptions } from './types';

const quietLogger = new Logger(() => (level, message) => {
  if (level === 'error') process.stderr.write(`graphile-worker: ${message}\n`);
});

/**
 * Defaults: only the concurrency is set (to the workload's slots).
 * Tuned, no-op workloads: the configuration on the "Performance" page of the
 * graphile-worker docs (localQueue 500, completeJobBatchDelay 0,
 * failJobBatchDelay 0, maxPoolSize 25) plus a 100 ms pollInterval, the
 * documented knob for how soon a job scheduled for the future is seen.
 * Tuned, sleep workloads (W4): the docs advise a small local queue or none
 * for slow jobs (locked jobs wait in one process while another idles), so no
 * local queue, and maxPoolSize concurrency + 2 as the docs suggest when every
 * worker fetches for itself; the 100 ms pollInterval stays.
 */
export function graphileOptions(options: Omit<StartOptions, 'collector' | 'url' | 'label'>): GraphileWorkerOptions {
  if (options.variant === 'default') return { concurrentJobs: options.slotsPerProcess };
  if (options.workload === 'sleep') {
    return {
      concurrentJobs: options.slotsPerProcess,
      pollInterval: 100,
      maxPoolSize: Math.max(10, options.slotsPerProcess + 2),
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    };
  }
  return {
    concurrentJobs: options.slotsPerProcess,
    pollInterval: 100,
    maxPoolSize: 25,
    localQueue: { size: 500 },
    completeJobBatchDelay: 0,
    failJobBatchDelay: 0,
  };
}

let capturedClaim: { text: string; name: string } | undefined;

/**
 * graphile-worker's batch claim statement is internal to the library. Rather
 * than re-typing it, the bench captures the exact statement a local queue of
 * 500 sends: it runs the library briefly on a pool whose clients note any query
 * named get_job*. The text is then replayed for W6.
 */
async function captureClaimStatement(url: string): Promise<{ text: string; name: string }> {
  if (capturedClaim) return capturedClaim;
  const pool = new Pool({ connectionString: url, max: 4 });
  pool.on('error', () => undefined);
  pool.on('connect', (client: PoolClient) => {
    const original = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (config: unknown, ...rest: unknown[]) => {
      const named = config as { name?: unknown; text?: unknown } | null;
      if (named && typeof named === 'object' && typeof named.name === 'string' && named.name.startsWith('get_job500')) {
        capturedClaim ??= { text: String(named.text), name: named.name };
      }
      return original(config, ...rest);
    };
  });
  const runner = await run({
    pgPool: pool,
    // A task no bench job uses: the probe must not claim the jobs W6 is about to time.
    // (Task ids are a parameter of the statement, so its text does not depend on them.)
    taskList: { 'bench-probe': async () => undefined },
    noHandleSignals: true,
    logger: quietLogger,
    preset: { worker: { concurrentJobs: 1, pollInterval: 50, localQueue: { size: 500 } } },
  });
  const deadline = Date.now() + 15_000;
  while (!capturedClaim && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  await runner.stop();
  await pool.end();
  if (!capturedClaim) throw new Error('could not capture graphile-worker claim statement');
  return capturedClaim;
}

export const graphileDriver: Driver = {
  system: 'graphile-worker',

  async prepare(url) {
    await runMigrations({ connectionString: url, logger: quietLogger });
  },

  async insert(url, batch) {
    // The library's documented bulk path, graphile_worker.add_jobs(job_spec[]),
    // called from SQL with the specs built by generate_series (100k per call).
    await withClient(url, async (client) => {
      for (let done = 0; done < batch.count; done += 100_000) {
        const n = Math.min(100_000, batch.count - done);
        await client.query(
          `SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
             SELECT ROW($1::text, json_strip_nulls(json_build_object('p', $2::int, 'd', dms, 's', $5::int)), NULL, to_timestamp(dms / 1000.0),
                        NULL, NULL, NULL, NULL)::graphile_worker.job_spec
             FROM (SELECT ($3::bigint + floor(random() * $4::bigint))::bigint AS dms FROM generate_series(1, $6::int)) g))`,
          [batch.task, batch.phase, batch.dueAtMs, Math.max(1, batch.spreadMs ?? 0), batch.sleepMs ?? null, n],
        );
      }
    });
  },

  async pending(pool) {
    // Completed jobs are deleted; failed ones would stay (none fail here).
    const { rows } = await pool.query(`SELECT count(*) AS n FROM graphile_worker._private_jobs WHERE run_at <= now()`);
    return Number(rows[0]?.n ?? 0);
  },

  async purgeDue(url) {
    await withClient(url, (client) => client.query(`DELETE FROM graphile_worker._private_jobs WHERE run_at <= now()`));
  },

  describe(options) {
    return { processes: options.processes, perProcess: graphileOptions(options) };
  },

  async start(options: StartOptions): Promise<RunningSystem> {
    const peerOptions = graphileOptions(options);
    const workers = await startWorkers({
      count: options.processes,
      label: options.label,
      role: 'worker',
      script: 'peer-worker',
      env: () => ({ DATABASE_URL: options.url, BENCH_SYSTEM: 'graphile-worker', BENCH_PEER_OPTIONS: JSON.stringify(peerOptions) }),
      onMessage: options.collector.onMessage,
      profileDir: options.profileDir,
    });
    let utils: WorkerUtils | undefined;
    return {
      options: graphileDriver.describe(options),
      coordinatorPid: null,
      workerPids: () => workers.map((worker) => worker.pid),
      async scheduleOne(phase, dueAtMs) {
        utils ??= await makeWorkerUtils({ connectionString: options.url, logger: quietLogger });
        await utils.addJob(TASK_NOOP, { p: phase, d: dueAtMs }, { runAt: new Date(dueAtMs) });
      },
      async stop() {
        await utils?.release();
        await Promise.all(workers.map((worker) => worker.stop(20_000)));
      },
    };
  },

  async claim500(url, samples) {
    const statement = await captureClaimStatement(url);
    const pool = new Pool({ connectionString: url, max: 1 });
    // A forced DROP DATABASE may end an idle connection before end() completes; without a listener that crashes the bench.
    pool.on('error', () => undefined);
    const timings: number[] = [];
    try {
      const { rows } = await pool.query(`SELECT id FROM graphile_worker._private_tasks WHERE identifier = $1`, [TASK_NOOP]);
      const taskIds = rows.map((row) => Number(row.id));
      for (let i = 0; i < samples + 1; i++) {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const t = performance.now();
          // Named like the library's own prepared statement; values: worker pool id, task ids.
          const { rowCount } = await client.query({ name: statement.name, text: statement.text, values: ['bench-w6', taskIds] });
          const elapsed = performance.now() - t;
          if (rowCount !== 500) throw new Error(`graphile-worker claim returned ${rowCount} rows, expected 500`);
          if (i > 0) timings.push(elapsed);
        } finally {
          await client.query('ROLLBACK');
          client.release();
        }
      }
    } finally {
      await pool.end();
    }
    return timings;
  },
};
