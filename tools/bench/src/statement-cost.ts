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
 *     [--shape kairos,hot,delete,queue] [--fillfactor 100]
 *
 * `--held N` first claims N jobs of another task and keeps them (long-running
 * runs, as a fleet of agents holds them), claimed after the table's ANALYZE
 * as in production, where the statistics see mostly DUE rows: the claim and
 * completion must not cost more per job because other leases are held.
 *
 * `--shape` prices storage changes before they are built: the same seeded
 * table claimed and completed by statements Kairos does not run (`Shape`
 * below), each in a database of its own; `--fillfactor` leaves room on the
 * table's pages for updates in place. Besides CPU, each statement's WAL bytes
 * per job and the completions PostgreSQL made HOT (in place, no index entry)
 * are reported.
 *
 * It starts its own embedded PostgreSQL (the harness's settings, autovacuum
 * off so that no worker runs beside the probe) and removes it at the end.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { Pool } from 'pg';
import { createPool, createStore, heldLeases, holderArrays, migrate, type ClaimedJob, type HeldLeaseRef } from '@kairos/store';
import { createDatabase, startCluster } from './cluster';
import { UUID_V7_SQL } from './common';

export interface StatementCost {
  jobs: number;
  /** Backend CPU per job claimed, microseconds. */
  claimUsPerJob: number;
  /** Backend CPU per job completed (the one-statement path for successes), microseconds. */
  completeUsPerJob: number;
  /** WAL the claims wrote, bytes per job. */
  claimWalBytesPerJob: number;
  /** WAL the completions wrote, bytes per job. */
  completeWalBytesPerJob: number;
  /** Updates of `jobs` rows PostgreSQL made HOT while the probe ran (a claim never is: it changes indexed columns). */
  hotUpdates: number;
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
 * What claims and completes the seeded jobs (`--shape`). Only `kairos` is
 * what Kairos runs; the others are what-ifs, each a floor for a schema change
 * (docs/benchmarks.md, "A HOT completion, measured"):
 *
 * - `kairos`: the store's claim and completion.
 * - `hot`: the store's claim; the "completion" sets only columns no index
 *   reads (the run's end and worker, the token, updated_at) and leaves the
 *   job CLAIMED, so PostgreSQL updates the row in place (HOT) whenever its
 *   page has room. Not a correct completion: what one that touches no indexed
 *   column could cost at best.
 * - `delete`: the store's claim; the completion deletes the job row, as
 *   graphile-worker's does. The job and its run are gone.
 * - `queue`: what is due and what is leased in a narrow table of its own
 *   (`live`: a row per DUE or CLAIMED job, with the due and lease indexes);
 *   `jobs` keeps its primary key and idempotency index only. The claim
 *   updates `live` rows and reads the job rows for their payloads; the
 *   completion deletes the `live` row and records the run on the job row
 *   (HOT when its page has room).
 */
export type Shape = 'kairos' | 'hot' | 'delete' | 'queue';
export const SHAPES: readonly Shape[] = ['kairos', 'hot', 'delete', 'queue'];

/**
 * The what-if completions name their batch as the store's do: its arrays (`holderArrays`, in job-id order) and
 * its fenced match on jobs (`heldLeases`).
 */
const HELD = heldLeases(1);
const HOT_COMPLETE_SQL = `
UPDATE jobs j SET lease_token = NULL, run_worker_id = j.lease_owner, run_finished_at = now(), updated_at = now()
FROM ${HELD.from}
WHERE ${HELD.match} AND ${HELD.claimed}`;
const DELETE_COMPLETE_SQL = `
DELETE FROM jobs j USING ${HELD.from}
WHERE ${HELD.match} AND ${HELD.claimed}`;
const QUEUE_SCHEMA_SQL = `
CREATE TABLE live (
  job_id uuid PRIMARY KEY, namespace text NOT NULL, task text NOT NULL, next_run_at timestamptz NOT NULL,
  state kairos_job_state NOT NULL, lease_until timestamptz, lease_owner text,
  lease_generation bigint NOT NULL, attempt integer NOT NULL, run_id bigint, run_started_at timestamptz);
CREATE INDEX live_due_idx ON live (next_run_at) WHERE state = 'DUE';
CREATE INDEX live_claimed_idx ON live (lease_until) WHERE state = 'CLAIMED';
DROP INDEX jobs_due_next_run_at_idx, jobs_claimed_lease_until_idx, jobs_due_catchup_occurrence_idx;`;
const QUEUE_FILL_SQL = `
INSERT INTO live (job_id, namespace, task, next_run_at, state, lease_generation, attempt)
SELECT id, namespace, task, next_run_at, 'DUE', 0, 0 FROM jobs WHERE task = $1 ORDER BY id`;
const QUEUE_CLAIM_SQL = `
WITH due AS MATERIALIZED (
  SELECT job_id FROM live WHERE state = 'DUE' AND next_run_at <= now() AND task = $1 AND namespace = 'default'
  ORDER BY next_run_at LIMIT $2 FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE live l SET state = 'CLAIMED', lease_owner = $3, lease_until = now() + interval '10 seconds',
    lease_generation = l.lease_generation + 1, attempt = l.attempt + 1, run_id = nextval('ended_runs_id_seq'),
    run_started_at = greatest(clock_timestamp(), l.next_run_at)
  FROM due WHERE l.job_id = due.job_id
  RETURNING l.job_id, l.lease_generation, l.attempt, l.run_id, l.next_run_at
)
SELECT c.job_id, c.lease_generation, j.task, j.payload::text, c.attempt, j.max_attempts, j.timeout_ms, j.trace_parent, c.run_id,
  floor(extract(epoch FROM j.occurrence_at) * 1000)::float8, floor(extract(epoch FROM c.next_run_at) * 1000)::float8
FROM claimed c JOIN jobs j ON j.id = c.job_id
ORDER BY c.next_run_at`;
const QUEUE_COMPLETE_SQL = `
WITH ended AS (
  DELETE FROM live l USING ${HELD.from}
  WHERE l.job_id = r.id AND l.lease_generation = r.generation AND l.lease_owner = r.owner AND l.state = 'CLAIMED'
  RETURNING l.job_id, l.lease_generation, l.attempt, l.run_id, l.run_started_at, l.lease_owner
)
UPDATE jobs j SET state = 'COMPLETED', next_run_at = NULL, lease_generation = e.lease_generation, attempt = e.attempt,
  run_id = e.run_id, run_started_at = e.run_started_at, run_finished_at = now(), run_worker_id = e.lease_owner, updated_at = now()
FROM ended e WHERE j.id = e.job_id`;

/** The seeded rows: due one-off jobs with the columns an API-created job gets. */
async function seed(pool: Pool, task: string, count: number): Promise<void> {
  await pool.query(
    `INSERT INTO jobs (id, task, run_at, occurrence_at, next_run_at, state, payload)
     SELECT ${UUID_V7_SQL}, $1, t, t, t, 'DUE', jsonb_build_object('p', 1, 'd', g)
     FROM (SELECT g, now() - interval '1 hour' + g * interval '1 ms' AS t FROM generate_series(1, $2::int) g) s`,
    [task, count],
  );
}

async function walPosition(pool: Pool): Promise<bigint> {
  const { rows } = await pool.query<{ wal: string }>(`SELECT (pg_current_wal_insert_lsn() - '0/0')::text AS wal`);
  return BigInt(rows[0]!.wal);
}

/** HOT updates of `jobs` so far, this backend's included (flushed to the statistics first). */
async function hotUpdatesOfJobs(pool: Pool): Promise<number> {
  await pool.query('SELECT pg_stat_force_next_flush()');
  const { rows } = await pool.query<{ hot: number }>(`SELECT n_tup_hot_upd::int AS hot FROM pg_stat_user_tables WHERE relid = 'jobs'::regclass`);
  return rows[0]!.hot;
}

/** `--fillfactor`'s range: PostgreSQL's own for a table. */
function checkFillfactor(fillfactor: number): void {
  if (!Number.isInteger(fillfactor) || fillfactor < 10 || fillfactor > 100) throw new Error(`--fillfactor must be a whole number from 10 to 100 (got ${fillfactor})`);
}

/**
 * Seeds `jobs` due one-off jobs into an empty, migrated database (the columns
 * an API-created job gets), then claims and completes them all, `batch` per
 * statement, with the statements of `shape` (default `kairos`). `pool` must
 * hold exactly one connection to a server on this machine: its backend is the
 * process measured.
 */
export async function measureStatements(
  pool: Pool,
  options: { jobs: number; batch: number; held?: number; shape?: Shape; fillfactor?: number },
): Promise<StatementCost> {
  if (pool.options.max !== 1) throw new Error('measureStatements needs a pool of one connection (max: 1): its backend is what is measured');
  const shape = options.shape ?? 'kairos';
  const held = options.held ?? 0;
  if (held > 0 && shape !== 'kairos') throw new Error(`--held needs --shape kairos (got ${shape})`);
  const fillfactor = options.fillfactor ?? 100;
  checkFillfactor(fillfactor);
  if (shape === 'queue') await pool.query(QUEUE_SCHEMA_SQL);
  // 100 is the table's default: left as the migrations made it.
  if (fillfactor !== 100) await pool.query(`ALTER TABLE jobs SET (fillfactor = ${fillfactor})`);
  await seed(pool, TASK, options.jobs);
  if (held > 0) await seed(pool, HELD_TASK, held);
  if (shape === 'queue') {
    if (fillfactor !== 100) await pool.query(`ALTER TABLE live SET (fillfactor = ${fillfactor})`);
    await pool.query(QUEUE_FILL_SQL, [TASK]);
  }
  await pool.query('VACUUM ANALYZE');
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

  const heldBy = (jobId: string, leaseGeneration: number): HeldLeaseRef => ({ jobId, leaseGeneration, owner: OWNER, tokenId: null });
  const claim = async (): Promise<HeldLeaseRef[]> => {
    if (shape === 'queue') {
      const { rows: claimedRows } = await pool.query<unknown[]>({ text: QUEUE_CLAIM_SQL, values: [TASK, options.batch, OWNER], rowMode: 'array' });
      return claimedRows.map((row) => heldBy(row[0] as string, Number(row[1])));
    }
    const jobs: ClaimedJob[] = await store.lease.claimDue({
      owner: OWNER,
      tokenId: null,
      namespace: 'default',
      tasks: [TASK],
      limit: options.batch,
      leaseMs: 10_000,
    });
    return jobs.map((job) => heldBy(job.jobId, job.leaseGeneration));
  };
  // How many of the batch it recorded.
  const complete = async (batch: HeldLeaseRef[]): Promise<number> => {
    if (shape === 'kairos') {
      const results = await store.lease.complete(batch.map((lease) => ({ ...lease, outcome: 'SUCCEEDED' as const })));
      return results.filter((result) => result.kind === 'recorded').length;
    }
    const sql = shape === 'hot' ? HOT_COMPLETE_SQL : shape === 'delete' ? DELETE_COMPLETE_SQL : QUEUE_COMPLETE_SQL;
    return (await pool.query(sql, holderArrays(batch))).rowCount ?? 0;
  };

  const hotBefore = await hotUpdatesOfJobs(pool);
  let claimNs = 0;
  let completeNs = 0;
  let claimWal = 0n;
  let completeWal = 0n;
  let done = 0;
  while (done < options.jobs) {
    const walBefore = await walPosition(pool);
    const before = await cpuNs(pid);
    const batch = await claim();
    const claimedAt = await cpuNs(pid);
    const walClaimed = await walPosition(pool);
    if (batch.length === 0) break;
    const between = await cpuNs(pid);
    const recorded = await complete(batch);
    const after = await cpuNs(pid);
    const walAfter = await walPosition(pool);
    if (recorded !== batch.length) throw new Error(`a completion was not recorded (${recorded} of ${batch.length})`);
    claimNs += claimedAt - before;
    completeNs += after - between;
    claimWal += walClaimed - walBefore;
    completeWal += walAfter - walClaimed;
    done += batch.length;
  }
  if (done !== options.jobs) throw new Error(`claimed ${done} of ${options.jobs} jobs`);
  return {
    jobs: done,
    claimUsPerJob: claimNs / done / 1000,
    completeUsPerJob: completeNs / done / 1000,
    claimWalBytesPerJob: Number(claimWal) / done,
    completeWalBytesPerJob: Number(completeWal) / done,
    hotUpdates: (await hotUpdatesOfJobs(pool)) - hotBefore,
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string', default: '40000' },
      batch: { type: 'string', default: '250' },
      rounds: { type: 'string', default: '3' },
      held: { type: 'string', default: '0' },
      shape: { type: 'string', default: 'kairos' },
      fillfactor: { type: 'string', default: '100' },
    },
  });
  const jobs = Number(values.jobs);
  const batch = Number(values.batch);
  const rounds = Number(values.rounds);
  const held = Number(values.held);
  const fillfactor = Number(values.fillfactor);
  for (const [name, value, least] of [['jobs', jobs, 1], ['batch', batch, 1], ['rounds', rounds, 1], ['held', held, 0]] as const) {
    if (!Number.isInteger(value) || value < least) throw new Error(`--${name} must be a whole number of at least ${least}`);
  }
  const shapes = values.shape.split(',');
  for (const shape of shapes) {
    if (!(SHAPES as readonly string[]).includes(shape)) throw new Error(`--shape: unknown shape "${shape}" (one or more of ${SHAPES.join(', ')})`);
  }
  checkFillfactor(fillfactor);
  const cluster = await startCluster({ extraSettings: { autovacuum: 'off' } });
  try {
    // Shapes alternate inside each round, so the machine's drift spreads over all of them.
    for (let round = 1; round <= rounds; round++) {
      for (const shape of shapes as Shape[]) {
        const pool = createPool({ connectionString: await createDatabase(cluster, `statement_cost_${round}_${shape}`), max: 1 });
        try {
          await migrate(pool);
          const cost = await measureStatements(pool, { jobs, batch, held, shape, fillfactor });
          console.log(
            `round ${round}, ${shape}, fillfactor ${fillfactor}: ${cost.jobs} jobs, ${batch} per statement, ${held} other leases held: ` +
              `claim ${cost.claimUsPerJob.toFixed(1)} us/job ${cost.claimWalBytesPerJob.toFixed(0)} WAL B/job, ` +
              `completion ${cost.completeUsPerJob.toFixed(1)} us/job ${cost.completeWalBytesPerJob.toFixed(0)} WAL B/job ` +
              `(PostgreSQL backend CPU); ${cost.hotUpdates} HOT updates of jobs`,
          );
        } finally {
          await pool.end();
        }
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
