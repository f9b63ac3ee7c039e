/**
 * CI smoke of the benchmark harness: builds it, runs `--smoke` (tiny sizes,
 * every workload, every system, its own embedded PostgreSQL) into a temp
 * folder, and checks the results file has the documented shape. No figure is
 * asserted: the benchmark is not a test, and CI machines are noisy.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const MAIN = path.join(ROOT, 'tools', 'bench', 'dist', 'main.js');

function run(file: string, args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = execFile(file, args, { cwd: ROOT, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, output: `${stdout}\n${stderr}` });
    });
    child.stdin?.end();
  });
}

const SPIKE_KEYS = ['p50Ms', 'p99Ms', 'maxMs', 'drainMs'];

function expectNumberOrNull(value: unknown, where: string): void {
  if (value !== null && typeof value !== 'number') throw new Error(`${where} should be a number or null, got ${JSON.stringify(value)}`);
}

describe('benchmark harness (smoke)', () => {
  let resultsDir: string;

  beforeAll(async () => {
    resultsDir = await mkdtemp(path.join(os.tmpdir(), 'kairos-bench-smoke-'));
  });

  afterAll(async () => {
    await rm(resultsDir, { recursive: true, force: true });
  });

  it('runs every workload at tiny sizes and writes results in the documented shape', async () => {
    const tsc = require.resolve('typescript/bin/tsc');
    const build = await run(process.execPath, [tsc, '-b', path.join(ROOT, 'tools', 'bench')], 180_000);
    if (build.code !== 0) throw new Error(`building tools/bench failed:\n${build.output}`);
    expect(existsSync(MAIN)).toBe(true);

    const bench = await run(process.execPath, [MAIN, '--smoke', '--results-dir', resultsDir], 240_000);
    if (bench.code !== 0) throw new Error(`bench --smoke failed (${bench.code}):\n${bench.output.slice(-6_000)}`);

    const results = JSON.parse(await readFile(path.join(resultsDir, 'latest.json'), 'utf8')) as Record<string, any>;
    expect(typeof results.machine?.cpus).toBe('number');
    expect(String(results.postgres?.version)).toMatch(/PostgreSQL/);
    expect(results.postgres?.settings?.fsync).toBe('on');
    for (const system of ['kairos', 'graphile-worker', 'pg-boss']) {
      const figures = results[system];
      expect(figures).toBeDefined();
      expectNumberOrNull(figures.throughputJobsPerSec, `${system}.throughputJobsPerSec`);
      for (const spike of ['spike2k', 'spike10k']) {
        for (const key of SPIKE_KEYS) expectNumberOrNull(figures[spike]?.[key], `${system}.${spike}.${key}`);
      }
      expectNumberOrNull(figures.seedCase?.drainMs, `${system}.seedCase.drainMs`);
      expectNumberOrNull(figures.seedCase?.lastStartLagMs, `${system}.seedCase.lastStartLagMs`);
      expectNumberOrNull(figures.idle?.p50Ms, `${system}.idle.p50Ms`);
      expectNumberOrNull(figures.idle?.p99Ms, `${system}.idle.p99Ms`);
      expectNumberOrNull(figures.claim500?.at10kMs, `${system}.claim500.at10kMs`);
      expectNumberOrNull(figures.claim500?.at1mMs, `${system}.claim500.at1mMs`);
      // W6 at 10M is opt-in (--w6-10m): not run here, so null.
      expect(figures.claim500?.at10mMs).toBeNull();
      expectNumberOrNull(figures.rssMiBAt1M, `${system}.rssMiBAt1M`);
      expectNumberOrNull(figures.commitsPerJob, `${system}.commitsPerJob`);
      expectNumberOrNull(figures.walBytesPerJob, `${system}.walBytesPerJob`);
      // W8 runs for every system.
      expect(typeof figures.bulkCreateJobsPerSec).toBe('number');
    }
    // Every workload ran: Kairos has a value for each figure of the shape.
    const kairos = results.kairos;
    for (const value of [
      kairos.throughputJobsPerSec,
      kairos.spike2k.p99Ms,
      kairos.spike10k.p99Ms,
      kairos.seedCase.drainMs,
      kairos.idle.p50Ms,
      kairos.claim500.at10kMs,
      kairos.claim500.at1mMs,
      kairos.rssMiBAt1M,
      kairos.commitsPerJob,
      kairos.bulkCreateGrpcJobsPerSec,
    ]) {
      expect(typeof value).toBe('number');
    }
    // Each job writes at least its claim's and its completion's row versions.
    expect(kairos.walBytesPerJob).toBeGreaterThan(100);
    expect(results['pg-boss'].rssMiBAt1M).toBeNull();
    expect(existsSync(path.join(resultsDir, 'latest-start-lag.svg'))).toBe(true);
    expect(existsSync(path.join(resultsDir, 'latest.md'))).toBe(true);
  }, 420_000);
});
