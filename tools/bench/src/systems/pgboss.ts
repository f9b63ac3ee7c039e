/**
 * pg-boss 10 in worker processes (peer-worker.ts), at its defaults and at its
 * documented tuning.
 */
import PgBoss from 'pg-boss';
import { Pool } from 'pg';
import { TASK_NOOP, TASK_SLEEP } from '../common';
import { withClient } from '../cluster';
import { startWorkers } from '../procs';
import type { PgBossOptions } from '../peer-worker';
import type { Driver, RunningSystem, StartOptions } from './types';

/**
 * Defaults: one work() call per slot (v10 runs one polling loop per work()
 * call, batchSize 1, polling every 2 s).
 * Tuned: pollingIntervalSeconds 0.5 (the documented minimum) and batchSize up
 * to 16 with the batch run concurrently (the maintainer's documented pattern),
 * slots / batchSize loops per process. The pool stays at its default (10).
 */
export function pgBossOptions(options: Omit<StartOptions, 'collector' | 'url' | 'label'>): PgBossOptions {
  if (options.variant === 'default') return { workers: options.slotsPerProcess, tasks: options.tasks };
  // The largest batch of at most 16 that divides the slots, so loops x batch = slots exactly.
  let batchSize = Math.min(16, options.slotsPerProcess);
  while (options.slotsPerProcess % batchSize !== 0) batchSize--;
  return {
    workers: options.slotsPerProcess / batchSize,
    batchSize,
    pollingIntervalSeconds: 0.5,
    tasks: options.tasks,
  };
}

/** A pg-boss instance for the bench process: no maintenance, no cron, schema already there. */
function clientBoss(url: string): PgBoss {
  const boss = new PgBoss({ connectionString: url, supervise: false, schedule: false, migrate: false, max: 2 });
  boss.on('error', () => undefined);
  return boss;
}

export const pgBossDriver: Driver = {
  system: 'pg-boss',

  async prepare(url) {
    const boss = new PgBoss({ connectionString: url, supervise: false, schedule: false, max: 2 });
    boss.on('error', () => undefined);
    await boss.start(); // installs the schema
    await boss.createQueue(TASK_NOOP);
    await boss.createQueue(TASK_SLEEP);
    await boss.stop({ graceful: false, wait: true });
  },

  async insert(url, batch) {
    // The library's bulk path, boss.insert(jobs[]) (one INSERT from a JSON array), 20k jobs per call.
    const boss = clientBoss(url);
    await boss.start();
    try {
      const spread = Math.max(1, batch.spreadMs ?? 0);
      for (let done = 0; done < batch.count; done += 20_000) {
        const n = Math.min(20_000, batch.count - done);
        const jobs: PgBoss.JobInsert[] = new Array(n);
        for (let i = 0; i < n; i++) {
          const due = batch.dueAtMs + Math.floor(Math.random() * spread);
          const data = batch.sleepMs === undefined ? { p: batch.phase, d: due } : { p: batch.phase, d: due, s: batch.sleepMs };
          jobs[i] = { name: batch.task, data, startAfter: new Date(due).toISOString() };
        }
        await boss.insert(jobs);
      }
    } finally {
      await boss.stop({ graceful: false, wait: true });
    }
  },

  async pending(pool) {
    // Due, and created / retry / active (completed jobs stay in the table until archived).
    const { rows } = await pool.query(
      `SELECT count(*) AS n FROM pgboss.job WHERE name IN ($1, $2) AND state < 'completed' AND start_after <= now()`,
      [TASK_NOOP, TASK_SLEEP],
    );
    return Number(rows[0]?.n ?? 0);
  },

  async purgeDue(url) {
    await withClient(url, (client) => client.query(`DELETE FROM pgboss.job WHERE start_after <= now()`));
  },

  describe(options) {
    return { processes: options.processes, perProcess: pgBossOptions(options) };
  },

  async start(options: StartOptions): Promise<RunningSystem> {
    const peerOptions = pgBossOptions(options);
    const workers = await startWorkers({
      count: options.processes,
      label: options.label,
      role: 'worker',
      script: 'peer-worker',
      env: () => ({ DATABASE_URL: options.url, BENCH_SYSTEM: 'pg-boss', BENCH_PEER_OPTIONS: JSON.stringify(peerOptions) }),
      onMessage: options.collector.onMessage,
      profileDir: options.profileDir,
    });
    let client: PgBoss | undefined;
    return {
      options: pgBossDriver.describe(options),
      coordinatorPid: null,
      workerPids: () => workers.map((worker) => worker.pid),
      async scheduleOne(phase, dueAtMs) {
        if (!client) {
          client = clientBoss(options.url);
          await client.start();
        }
        await client.send(TASK_NOOP, { p: phase, d: dueAtMs }, { startAfter: new Date(dueAtMs) });
      },
      async stop() {
        await client?.stop({ graceful: false, wait: true });
        await Promise.all(workers.map((worker) => worker.stop(20_000)));
      },
    };
  },

  async claim500(url, samples) {
    const pool = new Pool({ connectionString: url, max: 1 });
    const boss = clientBoss(url);
    await boss.start();
    const timings: number[] = [];
    try {
      for (let i = 0; i < samples + 1; i++) {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          const db = { executeSql: (text: string, values: unknown[]) => client.query(text, values) };
          const t = performance.now();
          // The library's own fetch (the statement its workers run), on our transaction.
          const jobs = await boss.fetch(TASK_NOOP, { batchSize: 500, db });
          const elapsed = performance.now() - t;
          if (!jobs || jobs.length !== 500) throw new Error(`pg-boss fetch returned ${jobs?.length ?? 0} jobs, expected 500`);
          if (i > 0) timings.push(elapsed);
        } finally {
          await client.query('ROLLBACK');
          client.release();
        }
      }
    } finally {
      await boss.stop({ graceful: false, wait: true });
      await pool.end();
    }
    return timings;
  },
};
