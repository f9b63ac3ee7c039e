/**
 * From raw per-round figures to the results file: medians over rounds, the
 * issue's per-system shape, Kairos / peer ratios, target checks, and the
 * markdown table printed at the end of a run and pasted into docs/benchmarks.md.
 */
import { median, round, SYSTEMS, type SystemConfig, type SystemKey } from './common';
import type { Sizes } from './sizes';
import type { MillionResult, SeedCaseResult, W1Result, W6LargeResult } from './workloads';
import type { W8Result } from './w8';

export interface RawResults {
  w1: Record<string, W1Result[]>;
  million: Record<string, MillionResult[]>;
  w6small: Partial<Record<SystemKey, Array<number | null>>>;
  w4: Record<string, { high: SeedCaseResult; low: SeedCaseResult }>;
  w8: Partial<Record<SystemKey, W8Result[]>>;
  /** W6 at sizes.w6LargeFuture (`--w6-10m`), once per system. */
  w6large?: Partial<Record<SystemKey, W6LargeResult>>;
}

export interface SpikeFigures {
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  drainMs: number | null;
  /** Extra: when the database showed the spike durably completed. */
  durableDrainMs: number | null;
  /** Extra (Kairos): due -> claim transaction, from runs.started_at. */
  claimP50Ms?: number | null;
  claimP99Ms?: number | null;
  jobs: number;
}

export interface Figures {
  throughputJobsPerSec: number | null;
  spike2k: SpikeFigures | null;
  spike10k: SpikeFigures | null;
  /** Extra: the first 2k spike after start-up (cold JIT and caches); spike2k is the second. */
  spike2kCold: SpikeFigures | null;
  seedCase: { drainMs: number | null; lastStartLagMs: number | null; extrapolatedFromJobs: number | null; slots: number } | null;
  idle: { p50Ms: number | null; p99Ms: number | null } | null;
  /** at10mMs: at sizes.w6LargeFuture future jobs (`--w6-10m`; null when not run). */
  claim500: { at10kMs: number | null; at1mMs: number | null; at10mMs: number | null } | null;
  /** Extra, `--w6-10m` only: the large database's seeding and size. */
  w6Large?: W6LargeResult;
  rssMiBAt1M: number | null;
  commitsPerJob: number | null;
  // Extras beyond the issue's shape.
  seedCase200: { drainMs: number | null; lastStartLagMs: number | null; slots: number } | null;
  w1Capped: boolean | null;
  /** Extra: CPU microseconds per job during W1, per component (medians). */
  w1CpuUsPerJob: { coordinator: number | null; workers: number | null; postgres: number | null; total: number | null } | null;
  walFsyncsPerJob: number | null;
  /** WAL bytes written per W1 job (medians; results written before this figure existed lack it). */
  walBytesPerJob: number | null;
  workerRssMiBAt1M: number | null;
  /** W8: jobs per second created through the API (Kairos: REST POST /jobs:batch; gRPC below). */
  bulkCreateJobsPerSec: number | null;
  /** Extra (Kairos): W8 through gRPC CreateJobs. */
  bulkCreateGrpcJobsPerSec: number | null;
  /** W8: seconds to create all of sizes.w8.jobs through the API (Kairos: REST). */
  bulkCreateSeconds: number | null;
}

function spikeMedian(results: Array<MillionResult['w2']>): SpikeFigures | null {
  const present = results.filter((r): r is NonNullable<typeof r> => r !== undefined);
  if (present.length === 0) return null;
  return {
    p50Ms: round(median(present.map((r) => r.p50Ms))),
    p99Ms: round(median(present.map((r) => r.p99Ms))),
    maxMs: round(median(present.map((r) => r.maxMs))),
    drainMs: round(median(present.map((r) => r.drainMs))),
    durableDrainMs: round(median(present.map((r) => r.durableDrainMs))),
    ...(present.some((r) => r.claimLag)
      ? { claimP50Ms: round(median(present.map((r) => r.claimLag?.p50Ms))), claimP99Ms: round(median(present.map((r) => r.claimLag?.p99Ms))) }
      : {}),
    jobs: present[0]!.jobs,
  };
}

export function figuresFor(raw: RawResults, config: SystemConfig): Figures {
  const w1 = raw.w1[config.id] ?? [];
  const million = raw.million[config.id] ?? [];
  // W6 depends on the system's claim statement, not on worker tuning: shared by both variants
  // (but kairos:retention measures its own, with deletion running).
  const millionOfSystem =
    config.variant === 'retention'
      ? million
      : Object.entries(raw.million)
          .filter(([id]) => (id === config.system || id.startsWith(`${config.system}:`)) && !id.endsWith(':retention'))
          .flatMap(([, results]) => results);
  const w4 = raw.w4[config.id];
  const w5 = million.map((m) => m.w5).filter((r): r is NonNullable<typeof r> => r !== undefined);
  const at10k = raw.w6small[config.system] ?? [];
  const at1m = millionOfSystem.map((m) => m.claim500At1mMs).filter((v): v is number | null => v !== undefined);
  // Measured once per system, with the default variant's claim (not under retention).
  const large = config.variant === 'retention' ? undefined : raw.w6large?.[config.system];
  /** Jobs the W1 CPU figures cover (after the warm-up; results written before it have only `completed`). */
  const measured = (r: (typeof w1)[number]) => Math.max(1, r.measuredJobs ?? r.completed);
  return {
    throughputJobsPerSec: round(median(w1.map((r) => r.throughputJobsPerSec)), 0),
    spike2k: spikeMedian(million.map((m) => m.w2)),
    spike10k: spikeMedian(million.map((m) => m.w3)),
    spike2kCold: spikeMedian(million.map((m) => m.w2Cold)),
    seedCase: w4
      ? { drainMs: round(w4.low.drainMs, 0), lastStartLagMs: round(w4.low.lastStartLagMs, 0), extrapolatedFromJobs: w4.low.extrapolatedFromJobs, slots: w4.low.slots }
      : null,
    idle: w5.length > 0 ? { p50Ms: round(median(w5.map((r) => r.p50Ms))), p99Ms: round(median(w5.map((r) => r.p99Ms))) } : null,
    claim500:
      at10k.length > 0 || at1m.length > 0 || large
        ? { at10kMs: round(median(at10k), 2), at1mMs: round(median(at1m), 2), at10mMs: round(large?.claimMs ?? null, 2) }
        : null,
    ...(large ? { w6Large: large } : {}),
    rssMiBAt1M: config.system === 'kairos' ? round(median(million.map((m) => m.coordinatorRssMiB))) : null,
    commitsPerJob: round(median(w1.map((r) => r.commitsPerJob)), 3),
    seedCase200: w4 ? { drainMs: round(w4.high.drainMs, 0), lastStartLagMs: round(w4.high.lastStartLagMs, 0), slots: w4.high.slots } : null,
    w1Capped: w1.length > 0 ? w1.some((r) => r.capped) : null,
    w1CpuUsPerJob:
      w1.length > 0
        ? {
            coordinator: round(median(w1.map((r) => (r.cpu.coordinatorS * 1e6) / measured(r))), 0),
            workers: round(median(w1.map((r) => (r.cpu.workersS * 1e6) / measured(r))), 0),
            postgres: round(median(w1.map((r) => (r.cpu.postgresS * 1e6) / measured(r))), 0),
            total: round(median(w1.map((r) => ((r.cpu.coordinatorS + r.cpu.workersS + r.cpu.postgresS) * 1e6) / measured(r))), 0),
          }
        : null,
    walFsyncsPerJob: round(median(w1.map((r) => r.walFsyncsPerJob)), 3),
    walBytesPerJob: round(median(w1.map((r) => r.walBytesPerJob ?? null)), 0),
    workerRssMiBAt1M: round(median(million.map((m) => m.workerRssMiB))),
    // W8 runs once per system, not per variant.
    bulkCreateJobsPerSec: raw.w8[config.system]?.[0]?.jobsPerSec ?? null,
    bulkCreateGrpcJobsPerSec: config.system === 'kairos' ? (raw.w8.kairos?.[1]?.jobsPerSec ?? null) : null,
    bulkCreateSeconds: raw.w8[config.system]?.[0]?.seconds ?? null,
  };
}

type Direction = 'higher' | 'lower';

interface MetricDef {
  key: string;
  label: string;
  unit: string;
  better: Direction;
  get: (f: Figures) => number | null | undefined;
}

export const METRICS: MetricDef[] = [
  { key: 'throughput', label: 'W1 throughput', unit: 'jobs/s', better: 'higher', get: (f) => f.throughputJobsPerSec },
  { key: 'cpuPerJob', label: 'W1 CPU per job, all processes', unit: 'µs', better: 'lower', get: (f) => f.w1CpuUsPerJob?.total },
  { key: 'spike2kP50', label: 'W2 spike 2k lag p50', unit: 'ms', better: 'lower', get: (f) => f.spike2k?.p50Ms },
  { key: 'spike2kP99', label: 'W2 spike 2k lag p99', unit: 'ms', better: 'lower', get: (f) => f.spike2k?.p99Ms },
  { key: 'spike2kMax', label: 'W2 spike 2k lag max', unit: 'ms', better: 'lower', get: (f) => f.spike2k?.maxMs },
  { key: 'spike2kDrain', label: 'W2 spike 2k drain', unit: 'ms', better: 'lower', get: (f) => f.spike2k?.drainMs },
  { key: 'spike2kColdP99', label: 'W2 first (cold) 2k spike lag p99', unit: 'ms', better: 'lower', get: (f) => f.spike2kCold?.p99Ms },
  { key: 'spike10kP50', label: 'W3 spike 10k lag p50', unit: 'ms', better: 'lower', get: (f) => f.spike10k?.p50Ms },
  { key: 'spike10kP99', label: 'W3 spike 10k lag p99', unit: 'ms', better: 'lower', get: (f) => f.spike10k?.p99Ms },
  { key: 'spike10kMax', label: 'W3 spike 10k lag max', unit: 'ms', better: 'lower', get: (f) => f.spike10k?.maxMs },
  { key: 'spike10kDrain', label: 'W3 spike 10k drain', unit: 'ms', better: 'lower', get: (f) => f.spike10k?.drainMs },
  { key: 'seedDrain', label: 'W4 2k x sleep on 20 slots: drain', unit: 'ms', better: 'lower', get: (f) => f.seedCase?.drainMs },
  { key: 'seedLastStart', label: 'W4 ... 20 slots: last start lag', unit: 'ms', better: 'lower', get: (f) => f.seedCase?.lastStartLagMs },
  { key: 'seed200Drain', label: 'W4 ... 200 slots: drain', unit: 'ms', better: 'lower', get: (f) => f.seedCase200?.drainMs },
  { key: 'seed200LastStart', label: 'W4 ... 200 slots: last start lag', unit: 'ms', better: 'lower', get: (f) => f.seedCase200?.lastStartLagMs },
  { key: 'idleP50', label: 'W5 idle lag p50', unit: 'ms', better: 'lower', get: (f) => f.idle?.p50Ms },
  { key: 'idleP99', label: 'W5 idle lag p99', unit: 'ms', better: 'lower', get: (f) => f.idle?.p99Ms },
  { key: 'claimAt10k', label: 'W6 500-row claim, 10k future', unit: 'ms', better: 'lower', get: (f) => f.claim500?.at10kMs },
  { key: 'claimAt1m', label: 'W6 500-row claim, 1M future', unit: 'ms', better: 'lower', get: (f) => f.claim500?.at1mMs },
  { key: 'claimAt10m', label: 'W6 500-row claim, 10M future', unit: 'ms', better: 'lower', get: (f) => f.claim500?.at10mMs },
  { key: 'rss', label: 'W7 coordinator RSS, 1M jobs', unit: 'MiB', better: 'lower', get: (f) => f.rssMiBAt1M },
  { key: 'workerRss', label: 'W7 worker process RSS (max)', unit: 'MiB', better: 'lower', get: (f) => f.workerRssMiBAt1M },
  { key: 'commits', label: 'W7 commits per job (W1)', unit: '', better: 'lower', get: (f) => f.commitsPerJob },
  { key: 'walFsyncs', label: 'W7 WAL fsyncs per job (W1)', unit: '', better: 'lower', get: (f) => f.walFsyncsPerJob },
  { key: 'walBytes', label: 'W7 WAL bytes per job (W1)', unit: 'B', better: 'lower', get: (f) => f.walBytesPerJob },
  { key: 'bulkCreate', label: 'W8 bulk create through the API (Kairos: REST)', unit: 'jobs/s', better: 'higher', get: (f) => f.bulkCreateJobsPerSec },
  { key: 'bulkCreateGrpc', label: 'W8 ... Kairos through gRPC CreateJobs', unit: 'jobs/s', better: 'higher', get: (f) => f.bulkCreateGrpcJobsPerSec },
];

function best(values: Array<number | null | undefined>, better: Direction): number | null {
  const present = values.filter((v): v is number => typeof v === 'number');
  if (present.length === 0) return null;
  return better === 'higher' ? Math.max(...present) : Math.min(...present);
}

export interface Report {
  bySystem: Record<string, unknown>;
  ratios: Record<string, Record<string, number | null>>;
  targets: Array<{ target: string; value: number | null; threshold: string; met: boolean | null }>;
  table: string;
  figuresByConfig: Record<string, Figures>;
}

export function buildReport(raw: RawResults, configs: SystemConfig[], sizes: Sizes): Report {
  const figuresByConfig: Record<string, Figures> = {};
  for (const config of configs) figuresByConfig[config.id] = figuresFor(raw, config);
  const bySystem: Record<string, unknown> = {};
  const ratios: Record<string, Record<string, number | null>> = {};
  const kairos = figuresByConfig.kairos;
  for (const system of SYSTEMS) {
    const variants = configs.filter((c) => c.system === system);
    if (variants.length === 0) continue;
    if (system === 'kairos') {
      bySystem[system] = { ...figuresByConfig.kairos, variant: 'default' };
      continue;
    }
    const primary = variants.find((c) => c.variant === 'tuned') ?? variants[0]!;
    const defaults = variants.find((c) => c.variant === 'default');
    bySystem[system] = {
      ...figuresByConfig[primary.id],
      // Kairos-only figures do not apply to peers.
      rssMiBAt1M: null,
      variant: primary.variant,
      ...(defaults && defaults !== primary ? { defaults: { ...figuresByConfig[defaults.id], rssMiBAt1M: null } } : {}),
    };
    if (kairos) {
      // Kairos / peer, against the better of the peer's variants for each figure.
      const r: Record<string, number | null> = {};
      for (const metric of METRICS) {
        if (metric.key === 'rss' || metric.key === 'workerRss') continue;
        const k = metric.get(kairos);
        const p = best(variants.map((c) => metric.get(figuresByConfig[c.id]!)), metric.better);
        r[metric.key] = typeof k === 'number' && p !== null && p !== 0 ? round(k / p, 3) : null;
      }
      ratios[system] = r;
    }
  }
  const targets: Report['targets'] = [];
  if (kairos) {
    const peerBest = (system: SystemKey, get: (f: Figures) => number | null | undefined, better: Direction) =>
      best(configs.filter((c) => c.system === system).map((c) => get(figuresByConfig[c.id]!)), better);
    const add = (target: string, value: number | null | undefined, threshold: string, ok: (v: number) => boolean) =>
      targets.push({ target, value: value ?? null, threshold, met: typeof value === 'number' ? ok(value) : null });
    add('W1 throughput', kairos.throughputJobsPerSec, '>= 15000 jobs/s', (v) => v >= 15_000);
    const gwThroughput = peerBest('graphile-worker', (f) => f.throughputJobsPerSec, 'higher');
    if (gwThroughput !== null) add('W1 vs graphile-worker best', kairos.throughputJobsPerSec !== null ? kairos.throughputJobsPerSec / gwThroughput : null, '>= 1.25x', (v) => v >= 1.25);
    add('W2 spike 2k p99', kairos.spike2k?.p99Ms, '<= 200 ms', (v) => v <= 200);
    add('W3 spike 10k p99', kairos.spike10k?.p99Ms, '<= 500 ms', (v) => v <= 500);
    for (const peer of ['graphile-worker', 'pg-boss'] as const) {
      if (!configs.some((c) => c.system === peer)) continue;
      const p2 = peerBest(peer, (f) => f.spike2k?.p99Ms, 'lower');
      const p3 = peerBest(peer, (f) => f.spike10k?.p99Ms, 'lower');
      if (p2 !== null) add(`W2 p99 better than ${peer} best (${p2} ms)`, kairos.spike2k?.p99Ms, `< ${p2} ms`, (v) => v < p2);
      if (p3 !== null) add(`W3 p99 better than ${peer} best (${p3} ms)`, kairos.spike10k?.p99Ms, `< ${p3} ms`, (v) => v < p3);
    }
    add('W5 idle p50', kairos.idle?.p50Ms, '<= 5 ms', (v) => v <= 5);
    add('W5 idle p99', kairos.idle?.p99Ms, '<= 20 ms', (v) => v <= 20);
    const c = kairos.claim500;
    add('W6 claim at 1M / at 10k', c && c.at1mMs !== null && c.at10kMs ? c.at1mMs / c.at10kMs : null, '<= 1.5x', (v) => v <= 1.5);
    if (sizes.w6LargeFuture > 0) {
      add(`W6 claim at ${sizes.w6LargeFuture.toLocaleString('en')} / at 10k`, c && c.at10mMs !== null && c.at10kMs ? c.at10mMs / c.at10kMs : null, '<= 1.5x', (v) => v <= 1.5);
    }
    add('W7 coordinator RSS at 1M', kairos.rssMiBAt1M, '<= 200 MiB', (v) => v <= 200);
    add('W7 durable commits per job', kairos.commitsPerJob, '<= 0.1', (v) => v <= 0.1);
    if (sizes.w8.jobs >= 1_000_000) add('W8 1M jobs through REST POST /jobs:batch', kairos.bulkCreateSeconds, '< 60 s', (v) => v < 60);
  }
  const ratio = (a: number | null | undefined, b: number | null | undefined) =>
    typeof a === 'number' && typeof b === 'number' && b !== 0 ? round(a / b, 3) : null;
  const secure = figuresByConfig['kairos:secure'];
  if (kairos && secure) {
    // The security layer's cost: tokens and mTLS on, against the same build with them off, same run.
    bySystem['kairos:secure'] = {
      ...secure,
      variant: 'secure',
      vsInsecure: {
        throughput: ratio(secure.throughputJobsPerSec, kairos.throughputJobsPerSec),
        spike2kP99: ratio(secure.spike2k?.p99Ms, kairos.spike2k?.p99Ms),
        spike10kP99: ratio(secure.spike10k?.p99Ms, kairos.spike10k?.p99Ms),
      },
    };
  }
  const retention = figuresByConfig['kairos:retention'];
  if (kairos && retention) {
    // Retention's cost: old runs deleted throughout, against the same build keeping them, same run, same seeded history.
    bySystem['kairos:retention'] = {
      ...retention,
      variant: 'retention',
      vsNoRetention: {
        spike2kP50: ratio(retention.spike2k?.p50Ms, kairos.spike2k?.p50Ms),
        spike2kP99: ratio(retention.spike2k?.p99Ms, kairos.spike2k?.p99Ms),
        claimAt1m: ratio(retention.claim500?.at1mMs, kairos.claim500?.at1mMs),
      },
    };
  }
  return { bySystem, ratios, targets, table: markdownTable(configs, figuresByConfig, ratios, sizes), figuresByConfig };
}

function fmt(value: number | null | undefined, unit: string): string {
  if (value === null || value === undefined) return '–';
  if (unit === '') return value.toFixed(3);
  if (Math.abs(value) >= 100) return String(Math.round(value));
  return String(Math.round(value * 10) / 10);
}

function markdownTable(configs: SystemConfig[], figures: Record<string, Figures>, ratios: Report['ratios'], sizes: Sizes): string {
  const peers = Object.keys(ratios);
  const header = ['metric', ...configs.map((c) => c.id), ...peers.map((p) => `Kairos / ${p} best`)];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`];
  for (const metric of METRICS) {
    const cells = configs.map((c) => {
      const f = figures[c.id]!;
      const v = metric.get(f);
      let text = fmt(v, metric.unit);
      if (metric.key === 'throughput' && f.w1Capped) text += ' (capped)';
      if ((metric.key === 'seedDrain' || metric.key === 'seedLastStart') && f.seedCase?.extrapolatedFromJobs) text += ' (extrap.)';
      if (metric.key === 'rss' && c.system !== 'kairos') text = 'n/a';
      return text;
    });
    if (cells.every((cell) => cell === '–' || cell === 'n/a')) continue;
    const ratioCells = peers.map((p) => {
      const r = ratios[p]?.[metric.key];
      return r === null || r === undefined ? '–' : `${r.toFixed(2)}×`;
    });
    lines.push(`| ${metric.label}${metric.unit ? ` (${metric.unit})` : ''} | ${[...cells, ...ratioCells].join(' | ')} |`);
  }
  lines.push('');
  lines.push(
    `Sizes: W1 ${sizes.w1Jobs} jobs (the first ${sizes.w1WarmupJobs} not measured: warm-up); spikes ${sizes.spikeSmall} and ${sizes.spikeLarge} among ${sizes.futureJobs} future jobs` +
      `${sizes.warmupSpikeJobs > 0 ? `, after a cold spike and a warm-up spike of ${sizes.warmupSpikeJobs} (neither measured in W2/W3)` : ', W2 the second spike of a fresh system (no warm-up)'}; ` +
      `W4 ${sizes.w4.jobs} x ${sizes.w4.sleepMs} ms on ${sizes.w4.slotsLow} and ${sizes.w4.slotsHigh} slots; ` +
      `${sizes.processes} x ${sizes.slotsPerProcess} slots for W1-W3/W5; medians of ${sizes.rounds} round(s)${sizes.spikeRounds !== sizes.rounds ? ` (W2/W3: ${sizes.spikeRounds}, W5: ${sizes.w5Rounds})` : ''}.`,
  );
  const large = [...new Set(configs.map((c) => c.system))].flatMap((system) => {
    const r = configs.map((c) => (c.system === system ? figures[c.id]?.w6Large : undefined)).find((v) => v !== undefined);
    return r ? [`${system} seeded in ${Math.round(r.insertMs / 1000)} s, ${r.databaseMiB} MiB`] : [];
  });
  if (large.length > 0) {
    lines.push(
      `W6 at ${sizes.w6LargeFuture} future jobs: a database of its own per system, seeded once (${large.join('; ')}); median of ${sizes.rounds} timings of ${sizes.w6Samples} claims each, after the rounds.`,
    );
  }
  return lines.join('\n');
}
