/**
 * Worker processes (Kairos bench agents, peer workers) started with an IPC
 * channel for their records, plus an RSS sampler. Every process is stopped by
 * its own pid; `stopAllWorkers` is the safety net on the way out.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChildMessage } from './common';

export interface WorkerProcess {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Resolves when the process reports it is ready (connected / polling). */
  readonly ready: Promise<void>;
  readonly exited: Promise<number | string>;
  stderrTail(): string;
  /** SIGTERM, then SIGKILL after graceMs. */
  stop(graceMs?: number): Promise<number | string>;
}

const live = new Set<WorkerProcess>();

export const DIST_DIR = __dirname;

export function startWorker(
  name: string,
  script: 'kairos-agent' | 'peer-worker',
  env: Record<string, string>,
  onMessage: (message: ChildMessage) => void,
  options: { execArgv?: string[] } = {},
): WorkerProcess {
  const child = fork(path.join(DIST_DIR, `${script}.js`), [], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    execArgv: options.execArgv ?? [],
    serialization: 'json',
  });
  if (child.pid === undefined) throw new Error(`could not start ${name}`);
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-8_000);
  });
  let resolveReady!: () => void;
  let rejectReady!: (error: Error) => void;
  const ready = new Promise<void>((resolve, reject) => {
    resolveReady = resolve;
    rejectReady = reject;
  });
  ready.catch(() => undefined);
  child.on('message', (message: ChildMessage) => {
    if (message.t === 'ready') resolveReady();
    else if (message.t === 'error') {
      stderr = (stderr + message.message).slice(-8_000);
      rejectReady(new Error(`${name}: ${message.message}`));
    } else onMessage(message);
  });
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => {
      rejectReady(new Error(`${name} exited (${code ?? signal}) before it was ready; stderr: ${stderr.slice(-2_000)}`));
      resolve(code ?? signal ?? 'unknown');
    });
  });
  const worker: WorkerProcess = {
    name,
    pid: child.pid,
    child,
    ready,
    exited,
    stderrTail: () => stderr,
    async stop(graceMs = 20_000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill('SIGTERM');
      const timer = setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }, graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
  live.add(worker);
  void exited.then(() => live.delete(worker));
  return worker;
}

export async function stopAllWorkers(): Promise<void> {
  await Promise.all([...live].map((worker) => worker.stop(3_000)));
}

/** Resident set size of a pid in MiB (Linux /proc), or null once it is gone. */
export async function rssMiB(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const match = /VmRSS:\s+(\d+) kB/.exec(status);
    return match ? Number(match[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** Samples the peak RSS of some pids every intervalMs until stopped. */
export function rssSampler(pids: () => number[], intervalMs = 200): { stop(): Promise<Map<number, number>> } {
  const peaks = new Map<number, number>();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      for (const pid of pids()) {
        const rss = await rssMiB(pid);
        if (rss !== null) peaks.set(pid, Math.max(peaks.get(pid) ?? 0, rss));
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return peaks;
    },
  };
}

/** CPU seconds (user + system) of one pid from /proc/<pid>/stat; `children` adds reaped children's time. */
async function cpuOf(pid: number, children = false): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime, stime, cutime, cstime are fields 14-17.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]) + (children ? Number(fields[13]) + Number(fields[14]) : 0);
    return ticks / CLOCK_TICKS;
  } catch {
    return 0;
  }
}

const CLOCK_TICKS = 100;

/** PostgreSQL's CPU: the postmaster with its reaped backends, plus every live child. */
async function postgresCpu(postmasterPid: number): Promise<number> {
  const { readdir } = await import('node:fs/promises');
  let total = await cpuOf(postmasterPid, true);
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === postmasterPid) total += (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
    } catch {
      // the process ended between readdir and read
    }
  }
  return total;
}

export interface CpuSnapshot {
  at: number;
  coordinator: number;
  workers: number;
  postgres: number;
  bench: number;
}

export async function cpuSnapshot(coordinatorPid: number | null, workerPids: number[], postmasterPid: number | undefined): Promise<CpuSnapshot> {
  const usage = process.cpuUsage();
  const workers = await Promise.all(workerPids.map((pid) => cpuOf(pid)));
  return {
    at: Date.now(),
    coordinator: coordinatorPid ? await cpuOf(coordinatorPid) : 0,
    workers: workers.reduce((a, b) => a + b, 0),
    postgres: postmasterPid ? await postgresCpu(postmasterPid) : 0,
    bench: (usage.user + usage.system) / 1e6,
  };
}

/** CPU seconds each component used between two snapshots, with the wall time. */
export function cpuDelta(before: CpuSnapshot, after: CpuSnapshot) {
  const r = (v: number) => Math.round(v * 100) / 100;
  return {
    wallS: r((after.at - before.at) / 1000),
    coordinatorS: r(after.coordinator - before.coordinator),
    workersS: r(after.workers - before.workers),
    postgresS: r(after.postgres - before.postgres),
    benchS: r(after.bench - before.bench),
  };
}
export type CpuDelta = ReturnType<typeof cpuDelta>;

/** Rejects with `message` if `promise` has not settled within `ms`. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(message)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Forks `count` worker processes named `<label>-<role>-<i>` (with a CPU
 * profile each when `profileDir` is set) and waits until every one reports
 * ready. If one does not within 30 s, all are stopped and the error thrown.
 */
export async function startWorkers(options: {
  count: number;
  label: string;
  role: string;
  script: 'kairos-agent' | 'peer-worker';
  env: (name: string) => Record<string, string>;
  onMessage: (message: ChildMessage) => void;
  profileDir: string | undefined;
}): Promise<WorkerProcess[]> {
  const workers = Array.from({ length: options.count }, (_, i) => {
    const name = `${options.label}-${options.role}-${i}`;
    return startWorker(
      name,
      options.script,
      options.env(name),
      options.onMessage,
      options.profileDir ? { execArgv: ['--cpu-prof', `--cpu-prof-dir=${options.profileDir}/${name}`] } : {},
    );
  });
  try {
    await Promise.all(workers.map((worker) => withTimeout(worker.ready, 30_000, `${worker.name} did not become ready`)));
  } catch (error: unknown) {
    await Promise.all(workers.map((worker) => worker.stop(2_000)));
    throw error;
  }
  return workers;
}
