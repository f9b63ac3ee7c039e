/**
 * What PostgreSQL spends on each of Kairos's two per-job statements, measured
 * alone: the claim and the completion of successful one-off runs, run
 * serially on one connection against a table of due jobs, with the backend
 * process's on-CPU time read from /proc/<pid>/schedstat (nanoseconds) around
 * each statement. No coordinator, agents or concurrency: it isolates the
 * statements from everything else the harness's PostgreSQL figure carries
 * (autovacuum, the WAL writer, renewals, lock waits), so a change to a
 * statement can be judged in seconds. The machine's pace still moves the
 * absolute figures by ±15 % between runs: compare builds in alternation.
 *
 *   node tools/bench/dist/statement-cost.js [--jobs 40000] [--batch 250] [--rounds 3] [--held 0]
 *
 * `--held N` first claims N jobs of another task and keeps them (long-running
 * runs, as a fleet of agents holds them), claimed after the table's ANALYZE
 * as in production, where the statistics see mostly DUE rows: the claim and
 * completion must not cost more per job because other leases are held.
 *
 * It starts its own embedded PostgreSQL (the harness's settings, autovacuum
 * off so that no worker runs beside the probe) and removes it at the end.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { Pool } from 'pg';
import { createPool, createStore, migrate, type ClaimedJob } from '@kairos/store';
import { createDatabase, startCluster } from './cluster';
import { UUID_V7_SQL } from './common';

export interface StatementCost {
  jobs: number;
  /** Backend CPU per job claimed, microseconds. */
  claimUsPerJob: number;
  /** Backend CPU per job completed (the one-statement path for successes), microseconds. */
  completeUsPerJob: number;
}

const TASK = 'noop';
/** The task of the jobs `held` keeps claimed. */
const HELD_TASK = 'long';
const OWNER = 'statement-cost';

/** On-CPU nanoseconds of a local process (first field of schedstat). */
async function cpuNs(pid: number): Promise<number> {
  const text = await readFile(`/proc/${pid}/schedstat`, 'utf8');
  return Number(text.split(' ')[0]);
}

/**
 * Seeds `jobs` due one-off jobs into an empty, migrated database (the columns
 * an API-created job gets), then claims and completes them all, `batch` per
 * statement. `pool` must hold exactly one connection to a server on this
 * machine: its backend is the process measured.
 */
export async function measureStatements(pool: Pool, options: { jobs: number; batch: number; held?: number }): Promise<StatementCost> {
  if (pool.options.max !== 1) throw new Error('measureStatements needs a pool of one connection (max: 1): its backend is what is measured');
  const seed = (task: string, count: number) =>
    pool.query(
      `INSERT INTO jobs (id, task, run_at, occurrence_at, next_run_at, state, payload)
       SELECT ${UUID_V7_SQL}, $1, t, t, t, 'DUE', jsonb_build_object('p', 1, 'd', g)
       FROM (SELECT g, now() - interval '1 hour' + g * interval '1 ms' AS t FROM generate_series(1, $2::int) g) s`,
      [task, count],
    );
  await seed(TASK, options.jobs);
  const held = options.held ?? 0;
  if (held > 0) await seed(HELD_TASK, held);
  await pool.query('VACUUM ANALYZE jobs');
  const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const pid = rows[0]!.pid;
  await cpuNs(pid).catch(() => {
    throw new Error(`cannot read /proc/${pid}/schedstat: the probe needs a PostgreSQL server on this machine`);
  });
  const store = createStore(pool);
  for (let claimed = 0; claimed < held; ) {
    const batch = await store.lease.claimDue({ owner: OWNER, tokenId: null, namespace: 'default', tasks: [HELD_TASK], limit: 5_000, leaseMs: 3_600_000 });
    if (batch.length === 0) throw new Error(`held ${claimed} of ${held} jobs`);
    claimed += batch.length;
  }
  let claimNs = 0;
  let completeNs = 0;
  let done = 0;
  while (done < options.jobs) {
    const before = await cpuNs(pid);
    const claimed: ClaimedJob[] = await store.lease.claimDue({
      owner: OWNER,
      tokenId: null,
      namespace: 'default',
      tasks: [TASK],
      limit: options.batch,
      leaseMs: 10_000,
    });
    const between = await cpuNs(pid);
    if (claimed.length === 0) break;
    const results = await store.lease.complete(
      claimed.map((job) => ({ jobId: job.jobId, leaseGeneration: job.leaseGeneration, owner: OWNER, tokenId: null, outcome: 'SUCCEEDED' as const })),
    );
    const after = await cpuNs(pid);
    if (results.some((result) => result.kind !== 'recorded')) throw new Error('a completion was not recorded');
    claimNs += between - before;
    completeNs += after - between;
    done += claimed.length;
  }
  if (done !== options.jobs) throw new Error(`claimed ${done} of ${options.jobs} jobs`);
  return { jobs: done, claimUsPerJob: claimNs / done / 1000, completeUsPerJob: completeNs / done / 1000 };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string', default: '40000' },
      batch: { type: 'string', default: '250' },
      rounds: { type: 'string', default: '3' },
      held: { type: 'string', default: '0' },
    },
  });
  const jobs = Number(values.jobs);
  const batch = Number(values.batch);
  const rounds = Number(values.rounds);
  const held = Number(values.held);
  for (const [name, value, least] of [['jobs', jobs, 1], ['batch', batch, 1], ['rounds', rounds, 1], ['held', held, 0]] as const) {
    if (!Number.isInteger(value) || value < least) throw new Error(`--${name} must be a whole number of at least ${least}`);
  }
  const cluster = await startCluster({ extraSettings: { autovacuum: 'off' } });
  try {
    for (let round = 1; round <= rounds; round++) {
      const pool = createPool({ connectionString: await createDatabase(cluster, `statement_cost_${round}`), max: 1 });
      try {
        await migrate(pool);
        const cost = await measureStatements(pool, { jobs, batch, held });
        console.log(
          `round ${round}: ${cost.jobs} jobs, ${batch} per statement, ${held} other leases held: claim ${cost.claimUsPerJob.toFixed(1)} us/job, ` +
            `completion ${cost.completeUsPerJob.toFixed(1)} us/job (PostgreSQL backend CPU)`,
        );
      } finally {
        await pool.end();
      }
    }
  } finally {
    await cluster.stop();
  }
}

if (require.main === module) {
  main().catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
