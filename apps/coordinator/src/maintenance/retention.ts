/**
 * The retention loop: every coordinator runs one, jittered, each pass deleting
 * old run history and finished jobs in small batches (libs/store
 * retention.ts) until there is nothing left to delete or the pass's time
 * budget is spent, so a backlog of millions of rows drains over many passes
 * without a long statement or a long burst of I/O.
 */
import type { Logger } from 'pino';
import type { Store } from '@kairos/store';
import { periodic, type Periodic } from './periodic';

export interface RetentionOptions {
  /** Runs finished longer ago than this are deleted; null: kept forever. */
  runRetentionMs: number | null;
  /** COMPLETED and CANCELLED jobs unchanged for longer than this are deleted with their runs; null: kept forever. */
  jobRetentionMs: number | null;
  /** SDK payload schemas not advertised for this long are forgotten; null: kept. */
  schemaTtlMs: number | null;
  intervalMs: number;
  /** Longest a pass keeps deleting. */
  passBudgetMs?: number;
}

export interface RetentionLoop {
  start(): void;
  stop(): Promise<void>;
}

export function createRetention(deps: {
  store: Store;
  options: RetentionOptions;
  logger: Logger;
  onDeleted: (what: 'runs' | 'jobs', count: number) => void;
}): RetentionLoop {
  const { store, options, logger } = deps;
  const budgetMs = options.passBudgetMs ?? 250;
  const loop: Periodic = periodic(options.intervalMs, pass, logger, 'retention');
  let jobCursor: string | null = null;

  async function pass(): Promise<{ runs: number; jobs: number }> {
    const until = performance.now() + budgetMs;
    let runs = 0;
    let jobs = 0;
    if (options.runRetentionMs !== null) {
      for (;;) {
        const { deleted } = await store.retention.deleteOldRuns({ olderThanMs: options.runRetentionMs });
        runs += deleted;
        if (deleted === 0 || performance.now() >= until || loop.stopped) break;
      }
    }
    if (options.jobRetentionMs !== null) {
      do {
        const batch = await store.retention.deleteFinishedJobs({ olderThanMs: options.jobRetentionMs, after: jobCursor });
        jobs += batch.deletedJobs;
        runs += batch.deletedRuns;
        jobCursor = batch.nextAfter;
      } while (jobCursor !== null && performance.now() < until && !loop.stopped);
    }
    // A handful of rows at most: one statement a pass.
    if (options.schemaTtlMs !== null) await store.taskSchemas.forget(options.schemaTtlMs);
    if (runs > 0) deps.onDeleted('runs', runs);
    if (jobs > 0) deps.onDeleted('jobs', jobs);
    if (runs + jobs > 0) logger.debug({ runs, jobs }, 'retention: old rows deleted');
    return { runs, jobs };
  }

  return {
    start() {
      if (options.runRetentionMs === null && options.jobRetentionMs === null && options.schemaTtlMs === null) return;
      loop.start();
    },
    stop: () => loop.stop(),
  };
}
