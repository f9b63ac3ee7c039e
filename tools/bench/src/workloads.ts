/**
 * The workloads. Each function runs one system configuration through one
 * workload on a fresh database and returns raw figures; main.ts interleaves
 * them over rounds and report.ts takes medians.
 */
import os from 'node:os';
import { Pool } from 'pg';
import { createStore } from '@kairos/store';
import { Collector, type PhaseRecords } from './collector';
import { median, percentile, round, sleep, TASK_NOOP, TASK_SLEEP, type SystemConfig, type SystemKey } from './common';
import { createDatabase, dropDatabase, readCounters, vacuumAnalyze, waitForBackendsGone, withClient, type BenchCluster } from './cluster';
import { cpuDelta, cpuSnapshot, rssSampler, type CpuDelta, type CpuSnapshot } from './procs';
import type { Sizes } from './sizes';
import type { Driver, RunningSystem, StartOptions } from './systems/types';

export interface BenchContext {
  cluster: BenchCluster;
  collector: Collector;
  sizes: Sizes;
  drivers: Record<SystemKey, Driver>;
  log: (message: string) => void;
  profileDir?: string;
  /** pg_stat_statements is loaded: collect the top statements of each measured phase. */
  pgss: boolean;
  /** --trace: Kairos agents report when each job reached the handler thread. */
  trace: boolean;
  /** --retention: old finished runs seeded into Kairos's million-job template (0: none). */
  seedOldRuns?: number;
}

export interface LagFigures {
  count: number;
  minMs: number | null;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
}

export interface SpikeResult extends LagFigures {
  jobs: number;
  /** Last handler end minus due time. */
  drainMs: number | null;
  /** First moment the database showed every spike job completed, minus due time. */
  durableDrainMs: number | null;
  complete: boolean;
  /** CPU seconds per component from the end of the insert (before the due time) to durable completion. */
  cpu: CpuDelta | null;
  /** 1-minute load average at the end (noise indicator). */
  loadAverage: number;
  /**
   * Where the system records claim times (Kairos): due -> claim lag, so start
   * lag splits into claiming and delivery to the handler.
   */
  claimLag?: LagFigures;
  /** --trace (Kairos): due -> the agent's handler thread got the assignment. */
  assignLag?: LagFigures;
  /** --trace (Kairos): assignment on the handler thread -> handler start. */
  execLag?: LagFigures;
  /** --trace: CPU seconds per component from the due instant until the bench had every start (what the starts competed with). */
  spikeCpu?: CpuDelta;
  /** Sorted start lags (ms), thinned to at most 500 points, for the chart. */
  lags: number[];
}

export interface W1Result {
  jobs: number;
  completed: number;
  capped: boolean;
  elapsedMs: number;
  /** Jobs per second after the warm-up (sizes.w1WarmupJobs): from the start of the first measured job to durable completion. */
  throughputJobsPerSec: number;
  /** The same including the warm-up (from the first job's start): the figure before warm-up was excluded. */
  coldThroughputJobsPerSec: number;
  /** Jobs per second between first handler start and last handler end. */
  handlerJobsPerSec: number | null;
  /** Jobs not measured (warm-up). */
  warmupJobs: number;
  /** Jobs the CPU figures cover: those finished after the CPU snapshot taken at the end of the warm-up. */
  measuredJobs: number;
  commits: number;
  commitsPerJob: number;
  walFsyncsPerJob: number | null;
  /** WAL bytes written per job, warm-up jobs included (like commitsPerJob). */
  walBytesPerJob: number;
  /** CPU seconds per component from the end of the warm-up to durable completion. */
  cpu: CpuDelta;
  /** 1-minute load average when the run ended (the machine is shared: a noise indicator). */
  loadAverage: number;
  topStatements?: StatementStat[];
}

export interface MillionResult {
  w5?: LagFigures & { assignLag?: LagFigures; execLag?: LagFigures };
  /** The first spike after start and W5: JIT and caches cold. Reported apart. */
  w2Cold?: SpikeResult;
  /** The unmeasured warm-up spike between the cold spike and W2 (see runMillion); its lags are not kept. */
  warmup?: Omit<SpikeResult, 'lags'>;
  /** The 2k spike on a warm system: after the cold spike and the warm-up spike. */
  w2?: SpikeResult;
  w3?: SpikeResult;
  claim500At1mMs?: number | null;
  coordinatorRssMiB: number | null;
  workerRssMiB: number | null;
  options: Record<string, unknown>;
  topStatements?: Record<string, StatementStat[]>;
}

export interface SeedCaseResult {
  slots: number;
  jobs: number;
  sleepMs: number;
  /** Figures for `jobs` jobs as measured, or extrapolated from a scaled run. */
  drainMs: number | null;
  lastStartLagMs: number | null;
  p50Ms: number | null;
  extrapolatedFromJobs: number | null;
  measured: { jobs: number; drainMs: number | null; lastStartLagMs: number | null; firstStartLagMs: number | null };
  /** The seed card's arithmetic for the same case. */
  arithmetic: { drainMs: number; lastStartLagMs: number };
  options: Record<string, unknown>;
}

export interface StatementStat {
  query: string;
  calls: number;
  totalMs: number;
  meanMs: number;
  /** Planning time in total (pg_stat_statements.track_planning). */
  planMs: number;
  rows: number;
  /** WAL the statement wrote in total: records and bytes (full-page images included). */
  walRecords: number;
  walBytes: number;
}

export function dbName(kind: string, config: SystemConfig, round: number): string {
  return `b_${kind}_${config.id.replace(/[^a-z0-9]+/g, '_')}_r${round}`;
}

export function templateName(system: SystemKey): string {
  return `b_tpl_${system.replace(/[^a-z0-9]+/g, '_')}`;
}

/** Template per system: its schema plus `futureJobs` jobs due between +2 h and +30 days, vacuumed. */
export async function buildTemplate(ctx: BenchContext, system: SystemKey): Promise<number> {
  const name = templateName(system);
  const url = await createDatabase(ctx.cluster, name);
  const driver = ctx.drivers[system];
  const t = performance.now();
  await driver.prepare(url);
  await driver.insert(url, {
    task: TASK_NOOP,
    count: ctx.sizes.futureJobs,
    phase: 0,
    dueAtMs: Date.now() + 2 * 3_600_000,
    spreadMs: 30 * 86_400_000,
  });
  if (system === 'kairos' && (ctx.seedOldRuns ?? 0) > 0) await seedOldRuns(ctx, url, ctx.seedOldRuns!);
  await vacuumAnalyze(url);
  await withClient(url, (client) => client.query('CHECKPOINT'));
  return performance.now() - t;
}

/**
 * --retention: run history finished 40 days ago, as a year of busy scheduling
 * would leave it, for retention to delete while the workloads run. 100 runs per
 * (nonexistent, long deleted) job id, in id order like real history.
 */
async function seedOldRuns(ctx: BenchContext, url: string, count: number): Promise<void> {
  const t = performance.now();
  const batch = 1_000_000;
  for (let from = 0; from < count; from += batch) {
    const to = Math.min(count, from + batch);
    await withClient(url, (client) =>
      client.query(
        `INSERT INTO ended_runs (job_id, attempt, lease_generation, scheduled_for, worker_id, started_at, finished_at, outcome)
         SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(i / 100), 12, '0'))::uuid, 1, i % 100 + 1,
                t, 'bench-history', t, t + interval '5 ms', 'SUCCEEDED'
         FROM generate_series($1::bigint, $2::bigint - 1) AS i,
              LATERAL (SELECT now() - interval '40 days' + i * interval '100 ms' AS t) at`,
        [from, to],
      ),
    );
  }
  ctx.log(`  seeded ${count} old runs in ${((performance.now() - t) / 1000).toFixed(1)} s`);
}

function startOptions(ctx: BenchContext, config: SystemConfig, url: string, label: string, overrides: Partial<StartOptions> = {}): StartOptions {
  return {
    url,
    variant: config.variant,
    processes: ctx.sizes.processes,
    slotsPerProcess: ctx.sizes.slotsPerProcess,
    tasks: [TASK_NOOP],
    workload: 'noop',
    collector: ctx.collector,
    label,
    ...(ctx.profileDir ? { profileDir: ctx.profileDir } : {}),
    ...(ctx.trace ? { trace: true } : {}),
    ...overrides,
  };
}

/** Polls until the database shows nothing due and unfinished; returns when the first empty answer's query was issued. */
async function waitDurable(driver: Driver, pool: Pool, timeoutMs: number): Promise<{ at: number | null; queries: number }> {
  const deadline = Date.now() + timeoutMs;
  let queries = 0;
  for (;;) {
    const issued = Date.now();
    queries++;
    if ((await driver.pending(pool)) === 0) return { at: issued, queries };
    if (Date.now() > deadline) return { at: null, queries };
    await sleep(10);
  }
}

function lagFigures(sortedLags: number[]): LagFigures {
  return {
    count: sortedLags.length,
    minMs: sortedLags.length > 0 ? sortedLags[0]! : null,
    p50Ms: percentile(sortedLags, 50),
    p99Ms: percentile(sortedLags, 99),
    maxMs: sortedLags.length > 0 ? sortedLags[sortedLags.length - 1]! : null,
  };
}

export function thin(sorted: number[], max = 500): number[] {
  if (sorted.length <= max) return sorted;
  const out: number[] = [];
  for (let i = 0; i < max; i++) out.push(sorted[Math.round((i * (sorted.length - 1)) / (max - 1))]!);
  return out;
}

async function resetStatements(ctx: BenchContext): Promise<void> {
  if (ctx.pgss) await ctx.cluster.admin.query('SELECT pg_stat_statements_reset()');
}

async function topStatements(ctx: BenchContext, database: string): Promise<StatementStat[] | undefined> {
  if (!ctx.pgss) return undefined;
  const { rows } = await ctx.cluster.admin.query(
    `SELECT left(regexp_replace(s.query, '\\s+', ' ', 'g'), 240) AS query, s.calls, s.total_exec_time AS total, s.mean_exec_time AS mean, s.total_plan_time AS plan, s.rows,
       s.wal_records, s.wal_bytes::float8 AS wal_bytes
     FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
     WHERE d.datname = $1 ORDER BY s.total_exec_time DESC LIMIT 12`,
    [database],
  );
  return rows.map((row) => ({
    query: String(row.query),
    calls: Number(row.calls),
    totalMs: Math.round(Number(row.total) * 10) / 10,
    meanMs: Math.round(Number(row.mean) * 1000) / 1000,
    planMs: Math.round(Number(row.plan) * 10) / 10,
    rows: Number(row.rows),
    walRecords: Number(row.wal_records),
    walBytes: Number(row.wal_bytes),
  }));
}

// ---------------------------------------------------------------------------
// W1 throughput (and W7 commits per job)

export async function runW1(ctx: BenchContext, config: SystemConfig, round: number): Promise<W1Result> {
  const { cluster, collector, sizes } = ctx;
  const driver = ctx.drivers[config.system];
  const db = dbName('w1', config, round);
  const url = await createDatabase(cluster, db);
  try {
    await driver.prepare(url);
    const phase = collector.newPhase();
    await driver.insert(url, { task: TASK_NOOP, count: sizes.w1Jobs, phase, dueAtMs: Date.now() - 1_000 });
    await vacuumAnalyze(url);
    await waitForBackendsGone(cluster, db); // the seeding backends' statistics have landed
    const before = await readCounters(cluster, db);
    await resetStatements(ctx);
    const system = await driver.start(startOptions(ctx, config, url, `${config.id.replace(':', '-')}-w1-r${round}`));
    const cpuBefore = await cpuSnapshot(system.coordinatorPid, system.workerPids(), cluster.pid);
    const waitStart = Date.now();
    let firstSeen: number | null = null;
    let capped = false;
    let cappedAt = 0;
    let countAtCap = 0;
    let warm: { cpu: Awaited<ReturnType<typeof cpuSnapshot>>; count: number } | undefined;
    for (;;) {
      const n = collector.count(phase);
      if (warm === undefined && n >= sizes.w1WarmupJobs) {
        warm = { cpu: await cpuSnapshot(system.coordinatorPid, system.workerPids(), cluster.pid), count: n };
      }
      if (n >= sizes.w1Jobs) break;
      if (n > 0 && firstSeen === null) firstSeen = Math.min(...collector.records(phase).startedAt.slice(0, 1_000));
      if (firstSeen !== null && Date.now() - firstSeen > sizes.w1CapMs) {
        capped = true;
        cappedAt = Date.now();
        countAtCap = n;
        break;
      }
      if (firstSeen === null && Date.now() - waitStart > 60_000) {
        await system.stop();
        throw new Error(`${config.id}: no W1 job started within 60 s`);
      }
      await sleep(25);
    }
    const pool = new Pool({ connectionString: url, max: 1 });
    // A forced DROP DATABASE may end an idle connection before end() completes; without a listener that crashes the bench.
    pool.on('error', () => undefined);
    let durableAt: number | null = null;
    let ourQueries = 0;
    try {
      if (!capped) {
        const durable = await waitDurable(driver, pool, 60_000);
        durableAt = durable.at;
        ourQueries = durable.queries;
      }
    } finally {
      await pool.end();
    }
    const cpu = cpuDelta(warm?.cpu ?? cpuBefore, await cpuSnapshot(system.coordinatorPid, system.workerPids(), cluster.pid));
    const topStatementsW1 = await topStatements(ctx, db);
    await system.stop();
    await waitForBackendsGone(cluster, db);
    const after = await readCounters(cluster, db);
    const records = collector.records(phase);
    let t0 = Infinity;
    let lastEnd = 0;
    for (let i = 0; i < records.startedAt.length; i++) {
      t0 = Math.min(t0, records.startedAt[i]!);
      lastEnd = Math.max(lastEnd, records.endedAt[i]!);
    }
    const completed = records.startedAt.length;
    // The measured part starts when the first job after the warm-up started.
    const warmupJobs = Math.min(sizes.w1WarmupJobs, completed - 1);
    const tWarm = warmupJobs > 0 ? [...records.startedAt].sort((a, b) => a - b)[warmupJobs]! : t0;
    collector.forget(phase);
    const end = capped ? cappedAt : (durableAt ?? lastEnd);
    const doneJobs = capped ? countAtCap : sizes.w1Jobs;
    const commits = after.xactCommit - before.xactCommit - ourQueries;
    const result: W1Result = {
      jobs: sizes.w1Jobs,
      completed,
      capped,
      elapsedMs: end - t0,
      throughputJobsPerSec: (doneJobs - warmupJobs) / ((end - tWarm) / 1000),
      coldThroughputJobsPerSec: doneJobs / ((end - t0) / 1000),
      handlerJobsPerSec: capped ? null : sizes.w1Jobs / ((lastEnd - t0) / 1000),
      warmupJobs,
      measuredJobs: Math.max(1, completed - (warm?.count ?? 0)),
      commits,
      commitsPerJob: commits / Math.max(1, completed),
      walFsyncsPerJob:
        after.walFsyncs !== null && before.walFsyncs !== null ? (after.walFsyncs - before.walFsyncs) / Math.max(1, completed) : null,
      walBytesPerJob: (after.walBytes - before.walBytes) / Math.max(1, completed),
      cpu,
      loadAverage: Math.round(os.loadavg()[0]! * 100) / 100,
      ...(topStatementsW1 ? { topStatements: topStatementsW1 } : {}),
    };
    ctx.log(
      `  W1 ${config.id}: ${Math.round(result.throughputJobsPerSec)} jobs/s after ${warmupJobs} warm-up jobs (${Math.round(result.coldThroughputJobsPerSec)} with them)${capped ? ` (capped after ${sizes.w1CapMs / 1000} s, ${countAtCap}/${sizes.w1Jobs} done)` : ''}, ` +
        `${result.commitsPerJob.toFixed(3)} commits/job, ${Math.round(result.walBytesPerJob)} WAL bytes/job; CPU s: coordinator ${cpu.coordinatorS}, workers ${cpu.workersS}, postgres ${cpu.postgresS}, bench ${cpu.benchS} in ${cpu.wallS} s`,
    );
    return result;
  } finally {
    await dropDatabase(cluster, db);
  }
}

// ---------------------------------------------------------------------------
// W2, W3 spikes, W5 idle latency, W6 at 1M, W7 RSS — on a clone of the million-job template

/**
 * One fresh system per round, in this order: W5 (idle), the cold spike (the first after start-up, reported
 * apart), one unmeasured warm-up spike, W2, W3.
 *
 * The warm-up spike has W3's size, so it runs the same paths as both measured spikes (a slot-full at once,
 * then a queue draining as slots free). Without it, W2 was only the second spike of a fresh process: with
 * `--trace-opt`, V8 marked a Kairos agent's start path (the executor's `start`, `startWaiting`, `slotFreed`)
 * for TurboFan during W2 and compiled it there, 20-60 ms per function on the helper threads, beside the
 * other agent's drain on two cores; W3's first spike beyond the slots deoptimized and recompiled it again.
 * A scheduler's agents run for days, so a spike's lag on a warm process is what users meet; the cold spike
 * keeps the start-up figure. Every system gets the same warm-up. `--no-warmup` turns it off (Sizes.warmupSpikeJobs).
 */
export async function runMillion(
  ctx: BenchContext,
  config: SystemConfig,
  round: number,
  want: { w2: boolean; w3: boolean; w5: boolean; w6: boolean; w7: boolean },
): Promise<MillionResult> {
  const { cluster, collector, sizes } = ctx;
  const driver = ctx.drivers[config.system];
  const db = dbName('m', config, round);
  const url = await createDatabase(cluster, db, templateName(config.system));
  const result: MillionResult = { coordinatorRssMiB: null, workerRssMiB: null, options: {} };
  const statements: Record<string, StatementStat[]> = {};
  try {
    if (want.w6) {
      result.claim500At1mMs = await claimTiming(ctx, driver, url, config.variant === 'retention');
      ctx.log(`  W6 ${config.system} at ${sizes.futureJobs} future jobs: ${result.claim500At1mMs?.toFixed(2)} ms per 500-row claim`);
    }
    const needSystem = want.w2 || want.w3 || want.w5 || want.w7;
    if (!needSystem) return result;
    const system = await driver.start(startOptions(ctx, config, url, `${config.id.replace(':', '-')}-m-r${round}`));
    result.options = system.options;
    const sampler = rssSampler(() => [...(system.coordinatorPid ? [system.coordinatorPid] : []), ...system.workerPids()]);
    const pool = new Pool({ connectionString: url, max: 1 });
    // A forced DROP DATABASE may end an idle connection before end() completes; without a listener that crashes the bench.
    pool.on('error', () => undefined);
    try {
      if (want.w5) {
        await sleep(W5_SETTLE_MS);
        await resetStatements(ctx);
        result.w5 = await idleLatency(ctx, system);
        const top = await topStatements(ctx, db);
        if (top) statements.w5 = top;
        ctx.log(`  W5 ${config.id}: min ${result.w5.minMs} p50 ${result.w5.p50Ms} p99 ${result.w5.p99Ms} max ${result.w5.maxMs} ms`);
        const { assignLag, execLag } = result.w5;
        if (assignLag && execLag) ctx.log(`    due -> handler thread p50 ${assignLag.p50Ms} p99 ${assignLag.p99Ms}; -> handler start p50 ${execLag.p50Ms} p99 ${execLag.p99Ms} ms`);
      }
      if (want.w2) {
        result.w2Cold = await spike(ctx, driver, pool, url, sizes.spikeSmall, system);
        ctx.log(`  W2 (first spike, cold) ${config.id}: min ${result.w2Cold.minMs} p50 ${result.w2Cold.p50Ms} p99 ${result.w2Cold.p99Ms} max ${result.w2Cold.maxMs} drain ${result.w2Cold.drainMs} ms`);
      }
      if ((want.w2 || want.w3) && sizes.warmupSpikeJobs > 0) {
        const { lags: _lags, ...warmup } = await spike(ctx, driver, pool, url, sizes.warmupSpikeJobs, system);
        result.warmup = warmup;
        ctx.log(`  warm-up spike of ${sizes.warmupSpikeJobs} (not measured) ${config.id}: p50 ${warmup.p50Ms} p99 ${warmup.p99Ms} drain ${warmup.drainMs} ms`);
      }
      if (want.w2) {
        await resetStatements(ctx);
        result.w2 = await spike(ctx, driver, pool, url, sizes.spikeSmall, system);
        const top = await topStatements(ctx, db);
        if (top) statements.w2 = top;
        ctx.log(`  W2 ${config.id}: ${spikeLine(result.w2)}`);
      }
      if (want.w3) {
        await resetStatements(ctx);
        await vacuumAnalyze(url);
        result.w3 = await spike(ctx, driver, pool, url, sizes.spikeLarge, system);
        const top = await topStatements(ctx, db);
        if (top) statements.w3 = top;
        ctx.log(`  W3 ${config.id}: ${spikeLine(result.w3)}`);
      }
      if (!want.w2 && !want.w3 && !want.w5) await sleep(3_000); // W7 alone: let the system settle with a million jobs
    } finally {
      await pool.end();
      const peaks = await sampler.stop();
      if (system.coordinatorPid) result.coordinatorRssMiB = peaks.get(system.coordinatorPid) ?? null;
      const workerPeaks = system.workerPids().map((pid) => peaks.get(pid) ?? 0);
      result.workerRssMiB = workerPeaks.length > 0 ? Math.max(...workerPeaks) : null;
      await system.stop();
    }
    if (ctx.pgss) result.topStatements = statements;
    return result;
  } finally {
    await dropDatabase(cluster, db);
  }
}

/**
 * W5: jobs that come due one at a time on an otherwise idle system. All of them
 * are scheduled up front through the client API (the first due w5LeadMs after
 * the start, the next ones a random 0.5-1.5 x w5SpacingMs apart), so while they
 * come due nothing else happens: no insert or notification nudges a poller.
 * It begins W5_SETTLE_MS after the system reported ready, for every system: a
 * Kairos agent takes clock readings in its first two seconds (the extra
 * heartbeats after Welcome), and W5 measures a running system, not one
 * starting (the cold start is W2's first spike, reported apart).
 */
const W5_SETTLE_MS = 2_000;

async function idleLatency(ctx: BenchContext, system: RunningSystem): Promise<NonNullable<MillionResult['w5']>> {
  const { collector, sizes } = ctx;
  const phase = collector.newPhase();
  const start = Date.now();
  let due = start + sizes.w5LeadMs;
  const dues: number[] = [];
  for (let i = 0; i < sizes.w5Samples; i++) {
    dues.push(due);
    due += sizes.w5SpacingMs * (0.5 + Math.random());
  }
  for (const d of dues) await system.scheduleOne(phase, Math.round(d));
  const late = Date.now() - dues[0]!;
  if (late > 0) ctx.log(`  warning: W5 scheduling ran ${late} ms past the first due time`);
  await collector.waitFor(phase, sizes.w5Samples, due - Date.now() + 15_000);
  const records = collector.records(phase);
  const lags = records.startedAt.map((started, i) => started - records.dueAt[i]!).sort((a, b) => a - b);
  const split = traceSplit(records);
  collector.forget(phase);
  return { ...lagFigures(lags), ...(split ? { assignLag: lagFigures(split.assign), execLag: lagFigures(split.exec) } : {}) };
}

/** A spike's figures as one log line (the split and CPU readings only when present). */
function spikeLine(r: SpikeResult): string {
  return (
    `min ${r.minMs} p50 ${r.p50Ms} p99 ${r.p99Ms} max ${r.maxMs} drain ${r.drainMs} ms; CPU s ${JSON.stringify(r.cpu)}` +
    (r.claimLag ? `; claim lag p50 ${r.claimLag.p50Ms} p99 ${r.claimLag.p99Ms} ms` : '') +
    (r.assignLag ? `; at agent min ${r.assignLag.minMs} p50 ${r.assignLag.p50Ms} p99 ${r.assignLag.p99Ms}; exec p50 ${r.execLag?.p50Ms} p99 ${r.execLag?.p99Ms}` : '') +
    (r.spikeCpu ? `; CPU s from due ${JSON.stringify(r.spikeCpu)}` : '')
  );
}

/**
 * --trace: each job's lag split at the moment its agent's handler thread got it
 * (due -> handler thread, then -> handler start), sorted; undefined untraced.
 */
function traceSplit(records: PhaseRecords): { assign: number[]; exec: number[] } | undefined {
  if (!records.assignedAt.some((a) => a > 0)) return undefined;
  return {
    assign: records.assignedAt.map((a, i) => a - records.dueAt[i]!).sort((a, b) => a - b),
    exec: records.assignedAt.map((a, i) => records.startedAt[i]! - a).sort((a, b) => a - b),
  };
}

export async function spike(
  ctx: BenchContext,
  driver: Driver,
  pool: Pool,
  url: string,
  count: number,
  system: RunningSystem,
  task = TASK_NOOP,
  sleepMs?: number,
  timeoutMs?: number,
): Promise<SpikeResult> {
  const { collector, sizes } = ctx;
  const phase = collector.newPhase();
  const due = Date.now() + sizes.spikeLeadMs;
  const insertStart = Date.now();
  await driver.insert(url, { task, count, phase, dueAtMs: due, ...(sleepMs !== undefined ? { sleepMs } : {}) });
  const insertMs = Date.now() - insertStart;
  const slack = due - Date.now();
  const snapshot = () => cpuSnapshot(system.coordinatorPid, system.workerPids(), ctx.cluster.pid);
  const cpuBefore = await snapshot();
  if (slack < 200) ctx.log(`  warning: spike of ${count} was inserted only ${slack} ms before it was due (insert took ${insertMs} ms)`);
  // --trace: one more reading at the due instant, and one once every start has arrived.
  const atDue = ctx.trace ? new Promise<CpuSnapshot>((resolve) => setTimeout(() => resolve(snapshot()), Math.max(0, due - Date.now()))) : undefined;
  const complete = await collector.waitFor(phase, count, timeoutMs ?? sizes.spikeTimeoutMs);
  const spikeCpu = atDue && complete ? cpuDelta(await atDue, await snapshot()) : undefined;
  const durable = complete ? await waitDurable(driver, pool, 60_000) : { at: null };
  const cpu = cpuDelta(cpuBefore, await snapshot());
  const claimLags = driver.claimLags && complete ? await driver.claimLags(pool, due) : undefined;
  const records = collector.records(phase);
  const lags = records.startedAt.map((started, i) => started - records.dueAt[i]!).sort((a, b) => a - b);
  const lastEnd = records.endedAt.reduce((a, b) => Math.max(a, b), 0);
  const split = traceSplit(records);
  collector.forget(phase);
  return {
    jobs: count,
    ...(split ? { assignLag: lagFigures(split.assign), execLag: lagFigures(split.exec) } : {}),
    ...(spikeCpu ? { spikeCpu } : {}),
    ...lagFigures(lags),
    drainMs: complete ? lastEnd - due : null,
    durableDrainMs: durable.at !== null ? Math.max(durable.at, lastEnd) - due : null,
    complete,
    cpu,
    loadAverage: Math.round(os.loadavg()[0]! * 100) / 100,
    ...(claimLags ? { claimLag: lagFigures(claimLags.map((v) => Math.round(v * 10) / 10)) } : {}),
    lags: thin(lags),
  };
}

/**
 * W6: the 500-row claim's median time. With `deleting` (kairos:retention), a
 * retention loop deletes old runs on another connection the whole time, with
 * the coordinator's duty cycle by default (250 ms of deleting a second,
 * KAIROS_RETENTION_INTERVAL_MS 1000 in this variant), or without pauses when
 * BENCH_RETENTION_CONTINUOUS=1 (the worst case).
 */
async function claimTiming(ctx: BenchContext, driver: Driver, url: string, deleting = false): Promise<number | null> {
  await driver.insert(url, { task: TASK_NOOP, count: 500, phase: 0, dueAtMs: Date.now() - 60_000, spreadMs: 30_000 });
  await vacuumAnalyze(url);
  const deleter = deleting ? startDeleting(url) : undefined;
  const timings = (await driver.claim500(url, ctx.sizes.w6Samples).finally(() => deleter?.stop())).sort((a, b) => a - b);
  if (deleter) ctx.log(`  W6 retention: ${await deleter.stop()} old runs deleted during the claims`);
  await driver.purgeDue(url);
  await vacuumAnalyze(url);
  return percentile(timings, 50);
}

/** Deletes old runs in a loop (the store's retention batches) until stopped; stop() answers how many. */
function startDeleting(url: string): { stop(): Promise<number> } {
  const pool = new Pool({ connectionString: url, max: 1 });
  pool.on('error', () => undefined);
  const store = createStore(pool);
  const continuous = process.env['BENCH_RETENTION_CONTINUOUS'] === '1';
  let stopped = false;
  let deleted = 0;
  const loop = (async () => {
    while (!stopped) {
      const passEnd = performance.now() + 250;
      while (!stopped && (continuous || performance.now() < passEnd)) {
        deleted += (await store.retention.deleteOldRuns({ olderThanMs: 86_400_000 })).deleted;
      }
      if (!continuous) await sleep(750);
    }
  })().catch(() => undefined);
  let done: Promise<number> | undefined;
  return {
    stop() {
      stopped = true;
      done ??= loop.then(async () => {
        await pool.end().catch(() => undefined);
        return deleted;
      });
      return done;
    },
  };
}

export async function runW6Small(ctx: BenchContext, system: SystemKey, round: number): Promise<number | null> {
  const driver = ctx.drivers[system];
  const db = dbName('w6', { system, variant: 'default', id: system }, round);
  const url = await createDatabase(ctx.cluster, db);
  try {
    await driver.prepare(url);
    await driver.insert(url, {
      task: TASK_NOOP,
      count: ctx.sizes.w6SmallFuture,
      phase: 0,
      dueAtMs: Date.now() + 2 * 3_600_000,
      spreadMs: 30 * 86_400_000,
    });
    const ms = await claimTiming(ctx, driver, url);
    ctx.log(`  W6 ${system} at ${ctx.sizes.w6SmallFuture} future jobs: ${ms?.toFixed(2)} ms per 500-row claim`);
    return ms;
  } finally {
    await dropDatabase(ctx.cluster, db);
  }
}

export interface W6LargeResult {
  futureJobs: number;
  /** Wall time of the seeding (the driver's bulk insert), ms. */
  insertMs: number;
  /** VACUUM ANALYZE and CHECKPOINT after the seeding, ms. */
  vacuumMs: number;
  checkpointMs: number;
  /** pg_database_size after the seeding, MiB. */
  databaseMiB: number;
  /** Median over `sizes.rounds` claimTiming calls on this database (each the median of w6Samples claims, as at 10k and 1M). */
  claimMs: number | null;
  claimMsPerRound: Array<number | null>;
}

/**
 * W6 at the issue's scale check (`--w6-10m`): `w6LargeFuture` far-future jobs
 * (due +2 h to +30 days, like the other W6 sizes) in a database of their own,
 * seeded through the driver's bulk path (Kairos: INSERT … SELECT
 * generate_series, server side), vacuumed and checkpointed, then timed with the
 * same claimTiming. Run once per system; the database is dropped afterwards.
 */
export async function runW6Large(ctx: BenchContext, system: SystemKey): Promise<W6LargeResult> {
  const driver = ctx.drivers[system];
  const count = ctx.sizes.w6LargeFuture;
  const db = dbName('w6l', { system, variant: 'default', id: system }, 0);
  const url = await createDatabase(ctx.cluster, db);
  try {
    await driver.prepare(url);
    const dueAtMs = Date.now() + 2 * 3_600_000;
    const step = 1_000_000;
    const t0 = performance.now();
    for (let done = 0; done < count; done += step) {
      const n = Math.min(step, count - done);
      await driver.insert(url, { task: TASK_NOOP, count: n, phase: 0, dueAtMs, spreadMs: 30 * 86_400_000 });
      if (count > step) ctx.log(`  W6 ${system} large: ${done + n} of ${count} inserted (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
    }
    const insertMs = performance.now() - t0;
    const t1 = performance.now();
    await vacuumAnalyze(url);
    const vacuumMs = performance.now() - t1;
    const t2 = performance.now();
    await withClient(url, (client) => client.query('CHECKPOINT'));
    const checkpointMs = performance.now() - t2;
    const { rows } = await ctx.cluster.admin.query(`SELECT pg_database_size($1)::bigint AS b`, [db]);
    const databaseMiB = Math.round(Number(rows[0]?.b ?? 0) / 2 ** 20);
    ctx.log(
      `  W6 ${system} large: ${count} future jobs inserted in ${(insertMs / 1000).toFixed(1)} s, VACUUM ANALYZE ${(vacuumMs / 1000).toFixed(1)} s, ` +
        `CHECKPOINT ${(checkpointMs / 1000).toFixed(1)} s, database ${databaseMiB} MiB`,
    );
    // One seeding, but as many timings as the smaller sizes get rounds: a single median of 15 moves by 10-30 % here.
    const claimMsPerRound: Array<number | null> = [];
    for (let r = 0; r < ctx.sizes.rounds; r++) {
      claimMsPerRound.push(round(await claimTiming(ctx, driver, url), 3));
      ctx.log(`  W6 ${system} at ${count} future jobs (${r + 1}/${ctx.sizes.rounds}): ${claimMsPerRound[r]?.toFixed(2)} ms per 500-row claim`);
    }
    const claimMs = round(median(claimMsPerRound), 3);
    return { futureJobs: count, insertMs: Math.round(insertMs), vacuumMs: Math.round(vacuumMs), checkpointMs: Math.round(checkpointMs), databaseMiB, claimMs, claimMsPerRound };
  } finally {
    await dropDatabase(ctx.cluster, db);
  }
}

// ---------------------------------------------------------------------------
// W4: the seed's case, 2,000 sleep jobs at once on 200 and on 20 slots

export async function runW4(ctx: BenchContext, config: SystemConfig): Promise<{ high: SeedCaseResult; low: SeedCaseResult }> {
  const { cluster, sizes } = ctx;
  const plan = sizes.w4;
  const driver = ctx.drivers[config.system];
  const db = dbName('w4', config, 0);
  const url = await createDatabase(cluster, db, templateName(config.system));
  const pool = new Pool({ connectionString: url, max: 1 });
  // A forced DROP DATABASE may end an idle connection before end() completes; without a listener that crashes the bench.
  pool.on('error', () => undefined);
  try {
    const runAt = async (slots: number, jobs: number): Promise<SeedCaseResult> => {
      const full = jobs === plan.jobs;
      const system = await driver.start(
        startOptions(ctx, config, url, `${config.id.replace(':', '-')}-w4-${slots}`, {
          processes: plan.processes,
          slotsPerProcess: slots / plan.processes,
          tasks: [TASK_SLEEP],
          workload: 'sleep',
        }),
      );
      let measured: SpikeResult;
      try {
        const ideal = Math.ceil(jobs / slots) * plan.sleepMs;
        measured = await spike(ctx, driver, pool, url, jobs, system, TASK_SLEEP, plan.sleepMs, ideal * 1.5 + 60_000);
      } finally {
        await system.stop();
      }
      const firstStartLag = measured.lags[0] ?? null;
      const arithmetic = {
        drainMs: (plan.jobs * plan.sleepMs) / slots,
        lastStartLagMs: (Math.ceil(plan.jobs / slots) - 1) * plan.sleepMs,
      };
      let drainMs = measured.drainMs;
      let lastStartLagMs = measured.maxMs;
      if (!full && measured.drainMs !== null && measured.maxMs !== null && firstStartLag !== null) {
        // Linear extrapolation in waves: a wave is `slots` jobs; the scaled run
        // measures the period between waves (sleep + the system's per-wave cost).
        const wavesMeasured = Math.ceil(jobs / slots);
        const wavesFull = Math.ceil(plan.jobs / slots);
        const period = wavesMeasured > 1 ? (measured.maxMs - firstStartLag) / (wavesMeasured - 1) : plan.sleepMs;
        lastStartLagMs = firstStartLag + period * (wavesFull - 1);
        drainMs = lastStartLagMs + (measured.drainMs - measured.maxMs);
      }
      ctx.log(
        `  W4 ${config.id} @${slots} slots, ${jobs} jobs: drain ${measured.drainMs} ms, last start lag ${measured.maxMs} ms` +
          (full ? '' : ` -> ${plan.jobs} jobs (extrapolated): drain ${Math.round(drainMs ?? NaN)} ms, last start ${Math.round(lastStartLagMs ?? NaN)} ms`),
      );
      return {
        slots,
        jobs: plan.jobs,
        sleepMs: plan.sleepMs,
        drainMs,
        lastStartLagMs,
        p50Ms: full ? measured.p50Ms : null,
        extrapolatedFromJobs: full ? null : jobs,
        measured: { jobs, drainMs: measured.drainMs, lastStartLagMs: measured.maxMs, firstStartLagMs: firstStartLag },
        arithmetic,
        options: system.options,
      };
    };
    const high = await runAt(plan.slotsHigh, plan.jobs);
    const lowJobs = config.system === 'kairos' && plan.kairosFullLow ? plan.jobs : plan.scaledLowJobs;
    const low = await runAt(plan.slotsLow, lowJobs);
    return { high, low };
  } finally {
    await pool.end();
    await dropDatabase(cluster, db);
  }
}
