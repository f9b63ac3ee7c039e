/**
 * `npm run bench -- [--quick | --smoke] [--rounds N] [--only w1,w5] ...`
 *
 * Runs Kairos, graphile-worker and pg-boss on one embedded PostgreSQL server
 * started for the run, interleaving systems within each round, and writes
 * results/latest.json (plus a timestamped copy), results/latest.md (the
 * table) and results/latest-start-lag.svg. See docs/benchmarks.md.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile, copyFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Collector } from './collector';
import { SYSTEMS, configId, type SystemConfig, type SystemKey, type Variant } from './common';
import { dropDatabase, serverInfo, startCluster, type BenchCluster } from './cluster';
import { stopAllWorkers } from './procs';
import { buildReport, type RawResults } from './report';
import { sizesFor, W6_LARGE_FUTURE, WORKLOADS, type Mode, type Sizes, type WorkloadName } from './sizes';
import { startLagSvg } from './svg';
import { graphileDriver } from './systems/graphile';
import { kairosDriver } from './systems/kairos';
import { pgBossDriver } from './systems/pgboss';
import type { Driver } from './systems/types';
import { buildTemplate, runMillion, runW1, runW4, runW6Large, runW6Small, templateName, type BenchContext } from './workloads';
import { runW8 } from './w8';
import { runW9, type W9Result } from './w9';

const USAGE = `Usage: npm run bench -- [options]
  (default)            full mode: the issue's sizes, 3 interleaved rounds (30-50 min)
  --quick              full mode's W1 warm-up, spikes and million; W1 once, the spikes in 3 rounds of
                       fresh systems as in full mode, W5 once, smaller W4/W6/W8, peers' tuned variant
                       only: under 5 minutes
  --smoke              tiny sizes, peers' tuned variant only (CI; under a minute)
  --rounds N           rounds of W1/W2/W3/W5/W6/W7 (W4 always runs once)
  --slots PxS          worker processes x slots each for W1/W2/W3/W5 (default 2x256; a diagnostic:
                       results are comparable only at equal slots)
  --only w1,w5         workloads to run (w1..w8)
  --systems a,b        kairos,graphile-worker,pg-boss (default: all)
  --variants a,b       peer variants: default,tuned (default: both; quick and smoke: tuned)
  --retention          also run Kairos with retention deleting old runs (config kairos:retention), on
                       million-job databases seeded with --retention-runs old runs (default 10000000)
  --retention-runs N   old run rows seeded for --retention
  --w6-10m             W6 also at 10,000,000 future jobs, once per system, in a database of its own
                       (opt-in: seeding takes minutes and several GB; e.g. --only w6 --systems kairos)
  --secure             also run Kairos with authentication and mTLS on (config kairos:secure),
                       interleaved with the default: the cost of the security layer
  --w9 N               also run W9: one coordinator with N simulated agents (real streams and heartbeats)
                       against none, each with a 2000-job spike (Kairos only)
  --results-dir DIR    where results go (default tools/bench/results)
  --cpu-prof           write V8 CPU profiles of every Kairos/peer process to DIR/profiles-<time>/
  --pgss               load pg_stat_statements and record each phase's top statements
  --no-warmup          skip the unmeasured warm-up spike before W2/W3 (a diagnostic: figures compare only with
                       runs before 2026-12-02, when W2 was the second spike of a fresh process)
  --trace              Kairos agents report when each job reached the handler thread (adds a map update per job)
  --help`;

interface Args {
  mode: Mode;
  rounds?: number;
  slots?: { processes: number; slotsPerProcess: number };
  only: Set<WorkloadName>;
  systems: SystemKey[];
  variants: Variant[];
  resultsDir: string;
  cpuProf: boolean;
  pgss: boolean;
  trace: boolean;
  warmup: boolean;
  secure: boolean;
  retention: boolean;
  retentionRuns: number;
  w6Large: boolean;
  /** --w9 N: W9 with N simulated agents on one coordinator (Kairos only). */
  w9?: number;
}

function parseArgs(argv: string[]): Args {
  const args: Args = {
    mode: 'full',
    only: new Set(WORKLOADS),
    systems: [...SYSTEMS],
    variants: ['default', 'tuned'],
    resultsDir: path.resolve(__dirname, '..', 'results'),
    cpuProf: false,
    pgss: false,
    trace: false,
    warmup: true,
    secure: false,
    retention: false,
    retentionRuns: 10_000_000,
    w6Large: false,
  };
  let variantsGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    const list = (v: string) => v.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
    switch (arg) {
      case '--retention':
        args.retention = true;
        break;
      case '--retention-runs':
        args.retentionRuns = Number(value());
        if (!Number.isInteger(args.retentionRuns) || args.retentionRuns < 0) throw new Error('--retention-runs must be a whole number');
        break;
      case '--w9':
        args.w9 = Number(value());
        if (!Number.isInteger(args.w9) || args.w9 < 1 || args.w9 > 20_000) throw new Error('--w9 takes a number of simulated agents, 1 to 20000');
        break;
      case '--w6-10m':
        args.w6Large = true;
        break;
      case '--secure':
        args.secure = true;
        break;
      case '--quick':
        args.mode = 'quick';
        break;
      case '--smoke':
        args.mode = 'smoke';
        break;
      case '--full':
        args.mode = 'full';
        break;
      case '--rounds':
        args.rounds = Number(value());
        if (!Number.isInteger(args.rounds) || args.rounds < 1) throw new Error('--rounds must be a positive integer');
        break;
      case '--slots': {
        const m = /^(\d+)x(\d+)$/.exec(value());
        if (!m) throw new Error('--slots must look like 2x256');
        args.slots = { processes: Number(m[1]), slotsPerProcess: Number(m[2]) };
        break;
      }
      case '--only': {
        const names = list(value());
        for (const n of names) if (!WORKLOADS.includes(n as WorkloadName)) throw new Error(`--only: unknown workload ${n} (w1..w8)`);
        args.only = new Set(names as WorkloadName[]);
        break;
      }
      case '--systems': {
        const names = list(value());
        for (const n of names) if (!SYSTEMS.includes(n as SystemKey)) throw new Error(`--systems: unknown system ${n}`);
        args.systems = names as SystemKey[];
        break;
      }
      case '--variants': {
        const names = list(value());
        for (const n of names) if (n !== 'default' && n !== 'tuned') throw new Error(`--variants: unknown variant ${n}`);
        args.variants = names as Variant[];
        variantsGiven = true;
        break;
      }
      case '--results-dir':
        args.resultsDir = path.resolve(value());
        break;
      case '--cpu-prof':
        args.cpuProf = true;
        break;
      case '--pgss':
        args.pgss = true;
        break;
      case '--no-warmup':
        args.warmup = false;
        break;
      case '--trace':
        args.trace = true;
        break;
      case '--help':
      case '-h':
        process.stdout.write(`${USAGE}\n`);
        process.exit(0);
        break;
      default:
        throw new Error(`unknown option ${arg}\n${USAGE}`);
    }
  }
  if (args.mode !== 'full' && !variantsGiven) args.variants = ['tuned'];
  return args;
}

const DRIVERS: Record<SystemKey, Driver> = {
  kairos: kairosDriver,
  'graphile-worker': graphileDriver,
  'pg-boss': pgBossDriver,
};

function machineInfo() {
  const cpus = os.cpus();
  return {
    hostname: os.hostname(),
    cpuModel: cpus[0]?.model ?? 'unknown',
    cpus: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadAverageAtStart: os.loadavg().map((v) => Math.round(v * 100) / 100),
  };
}

/**
 * Which Kairos was measured: the commit checked out when the run started, and
 * whether apps/, libs/ or proto/ had uncommitted changes. (The compiled dist/
 * is what runs: build before benchmarking.)
 */
function kairosVersion(): { commit: string | null; dirty: boolean | null } {
  const root = path.resolve(__dirname, '..', '..', '..');
  try {
    const commit = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
    const status = execFileSync('git', ['status', '--porcelain', '--', 'apps', 'libs', 'proto'], { cwd: root, encoding: 'utf8' }).trim();
    return { commit, dirty: status.length > 0 };
  } catch {
    return { commit: null, dirty: null };
  }
}

function rotate<T>(items: T[], by: number): T[] {
  if (items.length === 0) return items;
  const k = by % items.length;
  return [...items.slice(k), ...items.slice(0, k)];
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const sizes: Sizes = { ...sizesFor(args.mode), ...(args.rounds ? { rounds: args.rounds, spikeRounds: args.rounds, w5Rounds: args.rounds } : {}), ...(args.slots ?? {}), ...(args.w6Large ? { w6LargeFuture: W6_LARGE_FUTURE } : {}), ...(args.warmup ? {} : { warmupSpikeJobs: 0 }) };
  const started = Date.now();
  // Read before anything runs: the working tree may move on during a 25-minute run.
  const measuredBuild = kairosVersion();
  const log = (message: string) => process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(4)}s] ${message}\n`);
  const configs: SystemConfig[] = args.systems.flatMap((system): SystemConfig[] =>
    system === 'kairos'
      ? [
          { system, variant: 'default', id: 'kairos' },
          ...(args.secure ? [{ system, variant: 'secure' as const, id: configId(system, 'secure') }] : []),
          ...(args.retention ? [{ system, variant: 'retention' as const, id: configId(system, 'retention') }] : []),
        ]
      : args.variants.map((variant) => ({ system, variant, id: configId(system, variant) })),
  );
  const want = (w: WorkloadName) => args.only.has(w);
  // W7's commits-per-job figure is measured during W1.
  const runW1Phase = want('w1') || want('w7');
  const millionWants = { w2: want('w2'), w3: want('w3'), w5: want('w5'), w6: want('w6'), w7: want('w7') };
  const runMillionPhase = Object.values(millionWants).some(Boolean);
  const needTemplates = runMillionPhase || want('w4');

  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  await mkdir(args.resultsDir, { recursive: true });
  const profileDir = args.cpuProf ? path.join(args.resultsDir, `profiles-${stamp}`) : undefined;
  if (profileDir) await mkdir(profileDir, { recursive: true });

  log(`mode ${args.mode}, ${sizes.rounds} round(s)${sizes.spikeRounds !== sizes.rounds ? ` (W2/W3: ${sizes.spikeRounds}, W5: ${sizes.w5Rounds})` : ''}, configs ${configs.map((c) => c.id).join(', ')}, workloads ${[...args.only].join(',')}`);
  let cluster: BenchCluster | undefined;
  const cleanup = async () => {
    await stopAllWorkers().catch(() => undefined);
    await cluster?.stop().catch(() => undefined);
  };
  let interrupted = false;
  const onSignal = () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    log('interrupted: stopping processes and PostgreSQL');
    void cleanup().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // A crash (an 'error' event nobody listens to, say) skips the finally below:
  // still stop the workers and PostgreSQL, so no server and data folder outlive the run.
  const onCrash = (error: unknown) => {
    log(`crashed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    void cleanup().finally(() => process.exit(1));
  };
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);

  try {
    cluster = await startCluster({ extraSettings: args.pgss ? { shared_preload_libraries: 'pg_stat_statements', 'pg_stat_statements.track': 'all', 'pg_stat_statements.track_planning': 'on' } : {} });
    if (args.pgss) await cluster.admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
    const postgres = await serverInfo(cluster);
    log(`PostgreSQL ${postgres.versionNum} (pid ${cluster.pid}), fsync=${postgres.settings.fsync}, synchronous_commit=${postgres.settings.synchronous_commit}`);
    const ctx: BenchContext = {
      cluster,
      collector: new Collector(),
      sizes,
      drivers: DRIVERS,
      log,
      ...(profileDir ? { profileDir } : {}),
      pgss: args.pgss,
      trace: args.trace,
      seedOldRuns: args.retention ? args.retentionRuns : 0,
    };
    const raw: RawResults = { w1: {}, million: {}, w6small: {}, w4: {}, w8: {} };
    const templateMs: Record<string, number> = {};
    if (needTemplates) {
      for (const system of args.systems) {
        log(`seeding template for ${system}: ${sizes.futureJobs} future jobs`);
        templateMs[system] = Math.round(await buildTemplate(ctx, system));
        log(`  ${system}: seeded and vacuumed in ${(templateMs[system]! / 1000).toFixed(1)} s`);
      }
    }
    // Rounds past `rounds` exist for the spikes (and W7, measured beside them) only.
    const spikeRounds = millionWants.w2 || millionWants.w3 || millionWants.w7 ? sizes.spikeRounds : 0;
    const allRounds = Math.max(sizes.rounds, spikeRounds);
    for (let r = 0; r < allRounds; r++) {
      const order = rotate(configs, r);
      log(`round ${r + 1}/${allRounds}: ${order.map((c) => c.id).join(' -> ')}`);
      if (runW1Phase && r < sizes.rounds) {
        for (const config of order) (raw.w1[config.id] ??= []).push(await runW1(ctx, config, r));
      }
      if (runMillionPhase && (r < sizes.rounds || r < spikeRounds)) {
        // W6 depends on the claim statement, not on worker tuning: once per system, and once more for
        // kairos:retention, whose W6 runs while old runs are deleted.
        const claimed = new Set<string>();
        for (const config of order) {
          const w6Key = config.variant === 'retention' ? config.id : config.system;
          const w6 = millionWants.w6 && r < sizes.rounds && !claimed.has(w6Key);
          if (w6) claimed.add(w6Key);
          const w5 = millionWants.w5 && r < sizes.w5Rounds;
          (raw.million[config.id] ??= []).push(await runMillion(ctx, config, r, { ...millionWants, w6, w5 }));
        }
      }
      if (want('w6') && r < sizes.rounds) {
        for (const system of rotate(args.systems, r)) (raw.w6small[system] ??= []).push(await runW6Small(ctx, system, r));
      }
    }
    if (want('w6') && sizes.w6LargeFuture > 0) {
      log(`W6 (once): ${sizes.w6LargeFuture} future jobs`);
      for (const system of args.systems) (raw.w6large ??= {})[system] = await runW6Large(ctx, system);
    }
    if (want('w4')) {
      const w4Configs = configs.filter((c) => c.system === 'kairos' || sizes.w4.peerVariants.includes(c.variant));
      log(`W4 (once): ${w4Configs.map((c) => c.id).join(', ')}`);
      for (const config of w4Configs) raw.w4[config.id] = await runW4(ctx, config);
    }
    if (want('w8')) {
      log(`W8 (once): ${sizes.w8.jobs} jobs through each system's API, ${sizes.w8.clients} calls in flight`);
      for (const system of args.systems) raw.w8[system] = await runW8(ctx, system);
    }
    let w9: W9Result[] | undefined;
    if (args.w9 !== undefined && args.systems.includes('kairos')) {
      log(`W9 (once): one coordinator with ${args.w9} simulated agents; a 2000-job spike`);
      w9 = await runW9(ctx, args.w9, 2000);
    }
    for (const system of args.systems) if (needTemplates) await dropDatabase(cluster, templateName(system));

    const report = buildReport(raw, configs, sizes);
    const results = {
      generatedAt: new Date().toISOString(),
      mode: args.mode,
      command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
      durationSec: Math.round((Date.now() - started) / 1000),
      machine: machineInfo(),
      kairosBuild: { ...measuredBuild, headAtEnd: kairosVersion().commit },
      postgres: { version: postgres.version, versionNum: postgres.versionNum, settings: postgres.settings },
      sizes,
      workloads: [...args.only],
      ...report.bySystem,
      ratios: report.ratios,
      targets: report.targets,
      configs: Object.fromEntries(
        configs.map((c) => [c.id, { options: raw.million[c.id]?.[0]?.options ?? null, w4Options: raw.w4[c.id]?.high.options ?? null }]),
      ),
      templateSeedMs: templateMs,
      ...(w9 ? { w9 } : {}),
      perRound: {
        w1: raw.w1,
        million: Object.fromEntries(
          Object.entries(raw.million).map(([id, rounds]) => [
            id,
            rounds.map((m) => ({
              ...m,
              w2Cold: m.w2Cold ? { ...m.w2Cold, lags: undefined } : undefined,
              w2: m.w2 ? { ...m.w2, lags: undefined } : undefined,
              w3: m.w3 ? { ...m.w3, lags: undefined } : undefined,
            })),
          ]),
        ),
        w6small: raw.w6small,
        w4: raw.w4,
      },
    };
    const json = `${JSON.stringify(results, null, 2)}\n`;
    await writeFile(path.join(args.resultsDir, `results-${stamp}.json`), json);
    await writeFile(path.join(args.resultsDir, 'latest.json'), json);
    await writeFile(path.join(args.resultsDir, 'latest.md'), `${report.table}\n`);
    // Start lags (sorted, thinned) per configuration and round, for re-plotting.
    const lags = {
      generatedAt: results.generatedAt,
      spikes: Object.fromEntries(
        Object.entries(raw.million).map(([id, rounds]) => [
          id,
          rounds.map((m) => ({ w2Cold: m.w2Cold?.lags ?? null, w2: m.w2?.lags ?? null, w3: m.w3?.lags ?? null })),
        ]),
      ),
    };
    await writeFile(path.join(args.resultsDir, 'latest-lags.json'), `${JSON.stringify(lags)}\n`);
    const panels = [
      { title: `W2: ${sizes.spikeSmall} jobs due at once`, pick: 'w2' as const },
      { title: `W3: ${sizes.spikeLarge} jobs due at once`, pick: 'w3' as const },
    ]
      .filter((p) => want(p.pick))
      .map((p) => ({
        title: p.title,
        series: configs.map((c) => ({
          label: c.id,
          lags: (raw.million[c.id] ?? []).flatMap((m) => m[p.pick]?.lags ?? []).sort((a, b) => a - b),
        })),
      }));
    if (panels.length > 0) {
      const svg = startLagSvg(panels, `${sizes.futureJobs.toLocaleString('en')} future jobs; ${sizes.processes} x ${sizes.slotsPerProcess} slots; all rounds pooled; ${results.generatedAt}`);
      await writeFile(path.join(args.resultsDir, 'latest-start-lag.svg'), svg);
      await copyFile(path.join(args.resultsDir, 'latest-start-lag.svg'), path.join(args.resultsDir, `start-lag-${stamp}.svg`));
    }
    process.stdout.write(`\n${report.table}\n\nTargets (Kairos):\n`);
    for (const t of report.targets) {
      const value = t.value === null ? '–' : Math.round(t.value * 1000) / 1000;
      process.stdout.write(`  ${t.met === null ? '?' : t.met ? 'MET   ' : 'MISSED'}  ${t.target}: ${value} (${t.threshold})\n`);
    }
    process.stdout.write(`\nWrote ${path.join(args.resultsDir, 'latest.json')} in ${Math.round((Date.now() - started) / 1000)} s\n`);
  } finally {
    await cleanup();
    if (profileDir) {
      // Keep the folder only if profiles were written.
      const { readdir } = await import('node:fs/promises');
      if ((await readdir(profileDir).catch(() => [])).length === 0) await rm(profileDir, { recursive: true, force: true });
    }
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
