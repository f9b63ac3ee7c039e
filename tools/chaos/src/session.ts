/**
 * One chaos session, start to verdict:
 *
 *   setup      private PostgreSQL, coordinator, receiver, 6 agents behind fault
 *              proxies, the recurring jobs;
 *   faults     N minutes of client traffic and seeded faults;
 *   heal       client mutations stop, paused jobs resume, every process and
 *              proxy is back to normal;
 *   settle     SETTLE_MS of normal running, then the stuck probe;
 *   drain      agents SIGTERM'd (the end of the observed window), leases left
 *              to lapse, then the final read of `jobs` and `runs`;
 *   check      the history goes through the checker.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync, appendFileSync } from 'node:fs';
import path from 'node:path';
import { Pool } from 'pg';
import { checkHistory, type CheckResult } from './checker';
import { Cluster, Postgres, TIMINGS, sleep } from './cluster';
import { FaultPlan, runFaults } from './faults';
import type { HFault, History, HJob, HRun, Probe } from './history';
import { startReceiver } from './receiver';
import { Rng } from './rng';
import { MAX_HANDLER_MS, Workload } from './workload';

export const AGENTS = 6;
export const RECURRING_JOBS = 200;
export const ONE_OFF_JOBS = 100;
const SETTLE_MS = 15_000;

export interface SessionOptions {
  minutes: number;
  seed: number;
  workDir: string;
  log: (message: string, fields?: Record<string, unknown>) => void;
}

export interface SessionOutcome {
  history: History;
  result: CheckResult;
}

export async function runSession(options: SessionOptions): Promise<SessionOutcome> {
  const { log } = options;
  const rng = new Rng(options.seed);
  const logDir = path.join(options.workDir, 'logs');
  mkdirSync(logDir, { recursive: true });

  const receiver = await startReceiver();
  const postgres = new Postgres(path.join(options.workDir, 'pg'), path.join(logDir, 'postgres.log'), log);
  const cluster = new Cluster(postgres, logDir, TIMINGS, receiver.host, log);
  let pool: Pool | undefined;
  const cleanup = async () => {
    cluster.beginClosing();
    for (const agent of cluster.agents) await agent.proxy.close().catch(() => undefined);
    await Promise.all(
      [...cluster.agents.map((a) => a.proc), ...cluster.coordinators.map((c) => c.proc)].map((proc) =>
        proc && cluster.isRunning(proc) ? proc.stop(5_000).catch(() => undefined) : undefined,
      ),
    );
    await pool?.end().catch(() => undefined);
    await postgres.stop().catch(() => postgres.kill());
    postgres.kill();
    await receiver.close().catch(() => undefined);
    await cluster.closeLogs();
  };
  activeCleanup = cleanup;

  try {
    // --- setup
    await postgres.start();
    log('postgres up', { url: postgres.url.replace(/:[^:@/]+@/, ':***@'), pid: postgres.pid });
    const first = await cluster.addCoordinatorSlot('c1');
    await cluster.addCoordinatorSlot('c2');
    await cluster.startCoordinator(first);
    log('coordinator up', { name: first.name, http: first.httpUrl, grpc: first.grpcAddress });
    pool = new Pool({ connectionString: postgres.url, max: 3, connectionTimeoutMillis: 3_000, statement_timeout: 10_000 });
    pool.on('error', () => undefined);
    for (let i = 1; i <= AGENTS; i++) {
      const agent = await cluster.addAgent(i);
      agent.preferred = first.name;
      await cluster.startAgent(agent);
    }
    await waitForAgents(cluster, AGENTS);
    log('agents connected', { agents: AGENTS, capacity: TIMINGS.agentCapacity });

    const sessionMs = options.minutes * 60_000;
    const workload = new Workload({
      rng: rng.fork('workload'),
      seed: options.seed,
      receiverUrl: receiver.url,
      recurring: RECURRING_JOBS,
      oneOff: ONE_OFF_JOBS,
      sessionMs,
      coordinators: () => cluster.liveCoordinators().map((c) => c.httpUrl),
      log,
    });
    await workload.createInitial();
    log('recurring jobs created', { jobs: workload.jobCount });

    // --- faults
    const startedAt = Date.now();
    workload.start();
    const faults: HFault[] = await runFaults(
      { cluster, workload, pool, rng: rng.fork('fault-targets'), log },
      new FaultPlan(rng.fork('faults')),
      startedAt + sessionMs,
    );
    await sleep(Math.max(0, startedAt + sessionMs - Date.now()));

    // --- heal
    await workload.stop();
    await cluster.supervised();
    await healEverything(cluster);
    await workload.settle();
    const healedAt = Date.now();
    log('healed', { faults: faults.length, jobs: workload.jobCount });

    // --- settle, probe
    await sleep(SETTLE_MS);
    const probe = await takeProbe(pool);
    log('probe taken', { jobs: probe.jobs.length, running: probe.running.length });

    // --- drain: the observed window ends when agents are told to stop
    const observedUntil = Date.now();
    await cluster.supervised();
    await Promise.all(cluster.agents.map((agent) => cluster.stopAgent(agent, 'SIGTERM', TIMINGS.drainGraceMs + 10_000)));
    // Leases the drained agents still held lapse and are reaped: poll until no run is RUNNING.
    await waitForNoRunning(pool, TIMINGS.leaseMs * 4 + 2 * TIMINGS.reaperIntervalMs);
    const snapshot = await readStore(pool);
    log('final snapshot', { jobs: snapshot.jobs.length, runs: snapshot.runs.length });

    cluster.beginClosing();
    for (const coordinator of cluster.coordinators) {
      if (coordinator.proc && cluster.isRunning(coordinator.proc)) await coordinator.proc.stop(5_000);
    }
    await cluster.closeLogs();
    const staleReportsRejected = cluster.distinctLeasesInLogs('c', 'stale outcome rejected');

    const history: History = {
      seed: options.seed,
      minutes: options.minutes,
      commit: describeCheckout(),
      leaseMs: TIMINGS.leaseMs,
      retryBaseMs: TIMINGS.retryBaseMs,
      maxHandlerMs: MAX_HANDLER_MS,
      times: { startedAt, healedAt, observedUntil, snapshotAt: snapshot.at },
      jobs: snapshot.jobs,
      runs: snapshot.runs,
      calls: receiver.calls.map((call) => ({ ...call })),
      client: workload.log,
      faults,
      staleReportsRejected,
      probe,
      crashes: cluster.crashes,
    };
    return { history, result: checkHistory(history) };
  } finally {
    await cleanup();
    activeCleanup = undefined;
  }
}

let activeCleanup: (() => Promise<void>) | undefined;

/** For the CLI's signal handlers: stop whatever the running session started. */
export async function abortSession(): Promise<void> {
  await activeCleanup?.();
}

async function waitForAgents(cluster: Cluster, count: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    let connected = 0;
    for (const coordinator of cluster.liveCoordinators()) {
      try {
        const response = await fetch(`${coordinator.httpUrl}/agents`, { signal: AbortSignal.timeout(2_000) });
        connected += ((await response.json()) as unknown[]).length;
      } catch {
        // not yet
      }
    }
    if (connected >= count) return;
    if (Date.now() > deadline) throw new Error(`only ${connected} of ${count} agents connected`);
    await sleep(200);
  }
}

/** Every process running and every proxy passing bytes. */
async function healEverything(cluster: Cluster): Promise<void> {
  if (cluster.postgres.paused) cluster.postgres.resume();
  if (cluster.postgres.down) await cluster.postgres.start();
  const first = cluster.coordinators[0]!;
  if (!cluster.isRunning(first.proc)) await cluster.startCoordinator(first);
  for (const agent of cluster.agents) {
    agent.proxy.setMode({ kind: 'pass' });
    if (agent.proc && cluster.isRunning(agent.proc)) agent.proc.signal('SIGCONT');
    else await cluster.startAgent(agent);
  }
}

async function takeProbe(pool: Pool): Promise<Probe> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    const now = await client.query<{ now: Date }>('SELECT now() AS now');
    const jobs = await client.query('SELECT id, state, next_run_at, lease_until, lease_generation FROM jobs');
    const running = await client.query("SELECT job_id, lease_generation, started_at, worker_id FROM runs WHERE outcome = 'RUNNING'");
    await client.query('COMMIT');
    return {
      at: now.rows[0]!.now.getTime(),
      jobs: jobs.rows.map((row) => ({
        id: row.id,
        state: row.state,
        nextRunAt: ms(row.next_run_at),
        leaseUntil: ms(row.lease_until),
        generation: Number(row.lease_generation),
      })),
      running: running.rows.map((row) => ({
        jobId: row.job_id,
        generation: Number(row.lease_generation),
        startedAt: row.started_at.getTime(),
        workerId: row.worker_id,
      })),
    };
  } finally {
    client.release();
  }
}

async function waitForNoRunning(pool: Pool, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { rows } = await pool.query<{ n: string }>("SELECT count(*) AS n FROM runs WHERE outcome = 'RUNNING'");
    if (Number(rows[0]!.n) === 0) return;
    await sleep(250);
  }
}

async function readStore(pool: Pool): Promise<{ at: number; jobs: HJob[]; runs: HRun[] }> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    const now = await client.query<{ now: Date }>('SELECT now() AS now');
    const jobs = await client.query(
      'SELECT id, schedule, timezone, run_at, misfire_policy, created_at, state, occurrence_at, next_run_at, max_attempts FROM jobs',
    );
    const runs = await client.query(
      'SELECT id, job_id, attempt, lease_generation, scheduled_for, worker_id, started_at, finished_at, outcome, error FROM runs ORDER BY id',
    );
    await client.query('COMMIT');
    return {
      at: now.rows[0]!.now.getTime(),
      jobs: jobs.rows.map((row) => ({
        id: row.id,
        schedule: row.schedule,
        timezone: row.timezone,
        runAt: ms(row.run_at),
        misfirePolicy: row.misfire_policy,
        createdAt: row.created_at.getTime(),
        state: row.state,
        occurrenceAt: ms(row.occurrence_at),
        nextRunAt: ms(row.next_run_at),
        maxAttempts: row.max_attempts,
      })),
      runs: runs.rows.map((row) => ({
        id: Number(row.id),
        jobId: row.job_id,
        attempt: row.attempt,
        generation: row.lease_generation === null ? null : Number(row.lease_generation),
        scheduledFor: row.scheduled_for.getTime(),
        workerId: row.worker_id,
        startedAt: ms(row.started_at),
        finishedAt: ms(row.finished_at),
        outcome: row.outcome,
        error: row.error,
      })),
    };
  } finally {
    client.release();
  }
}

/** The checkout the session ran from, for the results; 'unknown' outside a git work tree. */
function describeCheckout(): string {
  try {
    return execFileSync('git', ['describe', '--always', '--dirty'], { cwd: path.resolve(__dirname, '..'), encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

function ms(value: Date | null): number | null {
  return value === null ? null : value.getTime();
}

export function removeWorkDir(workDir: string): void {
  rmSync(workDir, { recursive: true, force: true });
}

export function writeJson(file: string, value: unknown): void {
  writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

export function appendLine(file: string, line: string): void {
  appendFileSync(file, `${line}\n`);
}
