/**
 * Real processes for end-to-end and fault tests: coordinators and agents are
 * started from their compiled entry points (run `npm run build` first), with
 * their JSON log lines captured so tests can await what a process says
 * instead of sleeping. Every helper stops only the processes it started, by
 * pid; `stopAll()` in afterAll is the safety net.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');
export const COORDINATOR_MAIN = path.join(ROOT, 'apps', 'coordinator', 'dist', 'main.js');
export const AGENT_MAIN = path.join(ROOT, 'apps', 'agent', 'dist', 'main.js');

export type LogLine = Record<string, unknown> & { msg?: string };

export interface ManagedProcess {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Parsed JSON log lines so far (stdout); non-JSON output is kept as { msg: raw }. */
  readonly lines: LogLine[];
  /** Resolves with the first line (past or future) matching `match`. */
  waitForLine(match: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** Resolves with the exit code (or signal name) once the process ends. */
  readonly exited: Promise<number | string>;
  signal(signal: NodeJS.Signals): void;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when it is gone. */
  stop(graceMs?: number): Promise<number | string>;
}

const started = new Set<ManagedProcess>();

/** `node`: the Node.js binary to run it with (default: the one running the tests). */
export function spawnNode(name: string, script: string, env: Record<string, string | undefined>, node: string = process.execPath): ManagedProcess {
  return spawnProgram(name, node, [script], env);
}

/**
 * Any program that logs JSON lines (a single-file executable, say), managed like spawnNode's.
 * `detached`: the leader of a process group of its own, as a terminal's foreground job (signal the group with `process.kill(-pid, …)`).
 */
export function spawnProgram(
  name: string,
  program: string,
  args: readonly string[],
  env: Record<string, string | undefined>,
  options: { detached?: boolean } = {},
): ManagedProcess {
  const child = spawn(program, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  if (child.pid === undefined) throw new Error(`could not start ${name}`);
  const lines: LogLine[] = [];
  const waiters: Array<{ match: (line: LogLine) => boolean; resolve: (line: LogLine) => void }> = [];
  const stderr: string[] = [];
  let buffered = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffered += chunk;
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      const raw = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      let line: LogLine;
      try {
        line = JSON.parse(raw) as LogLine;
      } catch {
        line = { msg: raw };
      }
      lines.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.match(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr.push(chunk);
    if (stderr.length > 200) stderr.shift();
  });
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  const managed: ManagedProcess = {
    name,
    pid: child.pid,
    child,
    lines,
    exited,
    waitForLine(match, timeoutMs = 15_000) {
      const found = lines.find(match);
      if (found) return Promise.resolve(found);
      return new Promise<LogLine>((resolve, reject) => {
        const waiter = { match, resolve: (line: LogLine) => (clearTimeout(timer), resolve(line)) };
        const timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(waiter), 1);
          reject(
            new Error(
              `${name} (pid ${child.pid}) did not log the awaited line within ${timeoutMs} ms; ` +
                `last lines: ${JSON.stringify(lines.slice(-5))}; stderr: ${stderr.join('').slice(-2000)}`,
            ),
          );
        }, timeoutMs);
        waiters.push(waiter);
        void exited.then((code) => {
          if (waiters.includes(waiter)) {
            clearTimeout(timer);
            waiters.splice(waiters.indexOf(waiter), 1);
            reject(new Error(`${name} exited (${code}) before logging the awaited line; stderr: ${stderr.join('').slice(-2000)}`));
          }
        });
      });
    },
    signal(signal) {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, signal);
    },
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      // A stopped (SIGSTOP) process cannot handle SIGTERM until continued.
      process.kill(child.pid!, 'SIGCONT');
      process.kill(child.pid!, 'SIGTERM');
      const timer = setTimeout(() => managed.signal('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
  started.add(managed);
  void exited.then(() => started.delete(managed));
  return managed;
}

/** Whether `pid` is a running process (a zombie, dead but not yet reaped, is not). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    // A zombie still answers signal 0; look at its state.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Stops every process these helpers started and that is still running (afterAll). */
export async function stopAll(): Promise<void> {
  await Promise.all([...started].map((p) => p.stop(3_000)));
}

export interface CoordinatorProcess {
  proc: ManagedProcess;
  httpUrl: string;
  grpcAddress: string;
  coordinatorId: string;
}

export async function startCoordinatorProcess(options: {
  databaseUrl: string;
  leaseMs?: number;
  name?: string;
  grpcPort?: number;
  /**
   * Require tokens (the production default). Off by default here: the fault
   * and protocol tests predate authentication and exercise the same code path
   * as the anonymous caller of an --insecure coordinator.
   */
  auth?: boolean;
  env?: Record<string, string>;
  /** The Node.js binary (default: the one running the tests). */
  node?: string;
}): Promise<CoordinatorProcess> {
  const name = options.name ?? 'coordinator';
  const proc = spawnNode(name, COORDINATOR_MAIN, {
    DATABASE_URL: options.databaseUrl,
    KAIROS_HOST: '127.0.0.1',
    KAIROS_HTTP_PORT: '0',
    KAIROS_GRPC_PORT: String(options.grpcPort ?? 0),
    KAIROS_LEASE_MS: String(options.leaseMs ?? 1_500),
    KAIROS_POLL_INTERVAL_MS: '500',
    KAIROS_RETRY_BASE_MS: '100',
    KAIROS_SHUTDOWN_GRACE_MS: '1000',
    KAIROS_COORDINATOR_ID: name,
    KAIROS_LOG_LEVEL: 'info',
    KAIROS_INSECURE: options.auth === true ? 'false' : 'true',
    ...options.env,
  }, options.node);
  const ready = await proc.waitForLine((line) => line.msg === 'coordinator ready', 30_000);
  return {
    proc,
    httpUrl: String(ready.httpUrl),
    grpcAddress: String(ready.grpcAddress),
    coordinatorId: name,
  };
}

export async function startAgentProcess(options: {
  coordinator: string;
  agentId: string;
  tasks?: string;
  capacity?: number;
  env?: Record<string, string>;
  /** The Node.js binary (default: the one running the tests). */
  node?: string;
}): Promise<ManagedProcess> {
  const proc = spawnNode(options.agentId, AGENT_MAIN, {
    KAIROS_COORDINATOR: options.coordinator,
    KAIROS_AGENT_ID: options.agentId,
    KAIROS_AGENT_TASKS: options.tasks ?? 'sleep,http',
    KAIROS_AGENT_CAPACITY: String(options.capacity ?? 4),
    KAIROS_HTTP_ALLOW_HOSTS: '127.0.0.1,localhost',
    KAIROS_DRAIN_GRACE_MS: '5000',
    KAIROS_LOG_LEVEL: 'info',
    ...options.env,
  }, options.node);
  return proc;
}
