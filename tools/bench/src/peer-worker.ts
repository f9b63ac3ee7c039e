/**
 * A worker process for a peer system (graphile-worker or pg-boss), running the
 * same `noop` and `sleep5` handlers as the Kairos bench agent. The bench
 * process decides every option and passes them as JSON in BENCH_PEER_OPTIONS
 * (so the results file can list exactly what ran); this file only applies
 * them through each library's documented API.
 *
 * Environment: DATABASE_URL, BENCH_SYSTEM (graphile-worker | pg-boss),
 * BENCH_PEER_OPTIONS (see PeerOptions below).
 */
import { Logger, run, type TaskList } from 'graphile-worker';
import PgBoss from 'pg-boss';
import { TASK_NOOP, TASK_SLEEP } from './common';
import { noopJob, onTerminate, quietLog, reportError, reportReady, sleepJob } from './recorder';

/** What the bench hands a graphile-worker process: `preset.worker` options, applied as given. */
export interface GraphileWorkerOptions {
  concurrentJobs: number;
  pollInterval?: number;
  maxPoolSize?: number;
  localQueue?: { size: number };
  completeJobBatchDelay?: number;
  failJobBatchDelay?: number;
}

/** What the bench hands a pg-boss process. */
export interface PgBossOptions {
  /** work() calls per task (each is one polling worker). */
  workers: number;
  /** WorkOptions.batchSize; the handler runs a batch's jobs concurrently. */
  batchSize?: number;
  /** WorkOptions.pollingIntervalSeconds (unset: the library default). */
  pollingIntervalSeconds?: number;
  /** Constructor `max` (pool size; unset: the library default). */
  max?: number;
  /** Queues to work (only the workload's task, so idle loops do not double the polling). */
  tasks: string[];
}

const databaseUrl = process.env.DATABASE_URL ?? '';
const system = process.env.BENCH_SYSTEM;
const options = JSON.parse(process.env.BENCH_PEER_OPTIONS ?? '{}') as GraphileWorkerOptions & PgBossOptions;

async function startGraphileWorker(opts: GraphileWorkerOptions): Promise<void> {
  const taskList: TaskList = {
    [TASK_NOOP]: (payload) => noopJob(payload),
    [TASK_SLEEP]: (payload, helpers) => sleepJob(payload, helpers.abortSignal),
  };
  const runner = await run({
    taskList,
    noHandleSignals: true,
    logger: new Logger((scope) => (level, message, meta) => quietLog(`graphile-worker:${JSON.stringify(scope)}`, level, message, meta)),
    preset: {
      worker: {
        connectionString: databaseUrl,
        concurrentJobs: opts.concurrentJobs,
        ...(opts.pollInterval !== undefined ? { pollInterval: opts.pollInterval } : {}),
        ...(opts.maxPoolSize !== undefined ? { maxPoolSize: opts.maxPoolSize } : {}),
        ...(opts.localQueue !== undefined ? { localQueue: opts.localQueue } : {}),
        ...(opts.completeJobBatchDelay !== undefined ? { completeJobBatchDelay: opts.completeJobBatchDelay } : {}),
        ...(opts.failJobBatchDelay !== undefined ? { failJobBatchDelay: opts.failJobBatchDelay } : {}),
      },
    },
  });
  onTerminate(() => runner.stop());
  reportReady();
}

async function startPgBoss(opts: PgBossOptions): Promise<void> {
  const boss = new PgBoss({
    connectionString: databaseUrl,
    // The schema is installed by the bench before the run; workers only work.
    migrate: false,
    ...(opts.max !== undefined ? { max: opts.max } : {}),
  });
  boss.on('error', (error: unknown) => quietLog('pg-boss', 'error', String(error)));
  await boss.start();
  const workOptions = {
    ...(opts.batchSize !== undefined ? { batchSize: opts.batchSize } : {}),
    ...(opts.pollingIntervalSeconds !== undefined ? { pollingIntervalSeconds: opts.pollingIntervalSeconds } : {}),
  };
  for (let i = 0; i < opts.workers; i++) {
    // Each work() call is one polling loop; a loop's batch runs concurrently (the
    // maintainers' documented way to process several jobs at once in v10).
    if (opts.tasks.includes(TASK_NOOP)) {
      await boss.work(TASK_NOOP, workOptions, (jobs) => Promise.all(jobs.map((job) => noopJob(job.data))));
    }
    if (opts.tasks.includes(TASK_SLEEP)) {
      await boss.work(TASK_SLEEP, workOptions, (jobs) => Promise.all(jobs.map((job) => sleepJob(job.data))));
    }
  }
  onTerminate(() => boss.stop({ graceful: true, wait: true, timeout: 15_000 }));
  reportReady();
}

async function main(): Promise<void> {
  if (!databaseUrl) throw new Error('DATABASE_URL is required');
  if (system === 'graphile-worker') await startGraphileWorker(options);
  else if (system === 'pg-boss') await startPgBoss(options);
  else throw new Error(`BENCH_SYSTEM must be graphile-worker or pg-boss (got ${String(system)})`);
}

main().catch((error: unknown) => {
  void reportError(error).finally(() => process.exit(1));
});
