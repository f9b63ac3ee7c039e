/**
 * The processes of a chaos session and the levers the faults pull: a private
 * PostgreSQL (crash-stop, restart, pause), coordinators on fixed ports (so a
 * restarted one is found where the old one was), and agents, each behind its
 * own fault proxy. Everything is started by this process and stopped by pid.
 */
import { createWriteStream, readdirSync, readFileSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import { startEmbeddedPostgres, freePort, type EmbeddedPostgres } from '@kairos/store';
import { isAlive, startAgentProcess, startCoordinatorProcess, type ManagedProcess } from '@kairos/testing';
import { FaultProxy } from './proxy';

export interface Timings {
  leaseMs: number;
  reaperIntervalMs: number;
  pollIntervalMs: number;
  retryBaseMs: number;
  agentCapacity: number;
  drainGraceMs: number;
}

export const TIMINGS: Timings = {
  leaseMs: 3_000,
  reaperIntervalMs: 500,
  pollIntervalMs: 500,
  retryBaseMs: 100,
  agentCapacity: 16,
  drainGraceMs: 15_000,
};

type Log = (message: string, fields?: Record<string, unknown>) => void;

// ---------------------------------------------------------------------------
// PostgreSQL

export class Postgres {
  private server: EmbeddedPostgres | undefined;
  private port = 0;
  url = '';
  paused = false;
  down = false;

  private readonly serverLog: WriteStream;

  constructor(
    private readonly dataDir: string,
    logFile: string,
    private readonly log: Log,
  ) {
    this.serverLog = createWriteStream(logFile, { flags: 'a' });
  }

  get pid(): number | undefined {
    return this.server?.pid;
  }

  async start(): Promise<void> {
    const server = await startEmbeddedPostgres({
      dataDir: this.dataDir,
      ...(this.port > 0 ? { port: this.port } : {}),
      settings: { fsync: 'off', max_connections: '200', log_lock_waits: 'on' },
      onLog: (line) => this.serverLog.write(`${new Date().toISOString()} ${line}\n`),
    });
    this.server = server;
    this.port = server.port;
    this.url = server.url;
    this.down = false;
    this.paused = false;
  }

  /** Crash-stop: SIGKILL the postmaster and every backend at once (no shutdown checkpoint). */
  async crash(): Promise<void> {
    const pid = this.server?.pid;
    if (pid === undefined) throw new Error('postgres has no pid');
    const family = [pid, ...descendantsOf(pid)];
    for (const member of family) signal(member, 'SIGKILL');
    this.down = true;
    const deadline = Date.now() + 10_000;
    while (family.some(isAlive)) {
      if (Date.now() > deadline) throw new Error('postgres processes survived SIGKILL');
      await sleep(20);
    }
    this.log('postgres crashed (SIGKILL of postmaster and backends)', { pid, processes: family.length });
  }

  /** SIGSTOP of the postmaster first (no new backends), then of every backend. */
  pause(): void {
    const pid = this.server?.pid;
    if (pid === undefined) throw new Error('postgres has no pid');
    signal(pid, 'SIGSTOP');
    for (const member of descendantsOf(pid)) signal(member, 'SIGSTOP');
    this.paused = true;
  }

  resume(): void {
    const pid = this.server?.pid;
    if (pid === undefined) return;
    for (const member of descendantsOf(pid)) signal(member, 'SIGCONT');
    signal(pid, 'SIGCONT');
    this.paused = false;
  }

  async stop(): Promise<void> {
    if (this.paused) this.resume();
    if (!this.down && this.server !== undefined) {
      await this.server.stop();
      this.down = true;
    }
    await new Promise<void>((resolve) => this.serverLog.end(() => resolve()));
  }

  /** Last resort at exit: whatever is left of the cluster is killed by pid. */
  kill(): void {
    const pid = this.server?.pid;
    if (pid === undefined || !isAlive(pid)) return;
    for (const member of [pid, ...descendantsOf(pid)]) {
      signal(member, 'SIGCONT');
      signal(member, 'SIGKILL');
    }
  }
}

// ---------------------------------------------------------------------------
// Coordinators

export interface CoordinatorSlot {
  readonly name: string;
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly grpcAddress: string;
  readonly httpUrl: string;
  proc: ManagedProcess | undefined;
  incarnation: number;
  /** False while stopping: proxies send new connections elsewhere. */
  accepting: boolean;
  /** Set by the harness before it stops or kills the process on purpose. */
  expectExit: boolean;
  /** A restart after an unplanned exit, while it runs. */
  restarting: Promise<void> | undefined;
}

/** A process that exited without the harness asking it to: a finding, restarted as a supervisor would. */
export interface Crash {
  process: string;
  at: number;
  code: string;
  lastLines: string[];
}

export class Cluster {
  readonly coordinators: CoordinatorSlot[] = [];
  readonly agents: AgentSlot[] = [];
  readonly crashes: Crash[] = [];
  private closing = false;
  private readonly logs: WriteStream[] = [];
  private trimTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly postgres: Postgres,
    readonly logDir: string,
    readonly timings: Timings,
    readonly receiverHost: string,
    private readonly log: Log,
  ) {}

  async addCoordinatorSlot(name: string): Promise<CoordinatorSlot> {
    const grpcPort = await freePort();
    const httpPort = await freePort();
    const slot: CoordinatorSlot = {
      name,
      grpcPort,
      httpPort,
      grpcAddress: `127.0.0.1:${grpcPort}`,
      httpUrl: `http://127.0.0.1:${httpPort}`,
      proc: undefined,
      incarnation: 0,
      accepting: false,
      expectExit: false,
      restarting: undefined,
    };
    this.coordinators.push(slot);
    return slot;
  }

  /** Starts (or restarts) the coordinator of a slot; resolves when it logged ready. */
  async startCoordinator(slot: CoordinatorSlot): Promise<void> {
    slot.incarnation++;
    const started = await startCoordinatorProcess({
      databaseUrl: this.postgres.url,
      leaseMs: this.timings.leaseMs,
      name: `${slot.name}.${slot.incarnation}`,
      grpcPort: slot.grpcPort,
      env: {
        KAIROS_HTTP_PORT: String(slot.httpPort),
        KAIROS_REAPER_INTERVAL_MS: String(this.timings.reaperIntervalMs),
        KAIROS_POLL_INTERVAL_MS: String(this.timings.pollIntervalMs),
        KAIROS_RETRY_BASE_MS: String(this.timings.retryBaseMs),
        KAIROS_SHUTDOWN_GRACE_MS: '3000',
      },
    });
    slot.proc = started.proc;
    slot.accepting = true;
    slot.expectExit = false;
    const name = `${slot.name}.${slot.incarnation}`;
    this.capture(started.proc, name);
    const proc = started.proc;
    void proc.exited.then((code) => {
      if (slot.expectExit || this.closing || slot.proc !== proc) return;
      this.recordCrash(name, code, proc);
      slot.accepting = false;
      slot.restarting = (async () => {
        await sleep(1_000);
        if (this.closing || slot.proc !== proc) return;
        await this.startCoordinator(slot).catch((error: unknown) => this.log('coordinator restart failed', { error: String(error) }));
      })().finally(() => (slot.restarting = undefined));
    });
  }

  /** Stops or kills a coordinator on purpose (not a crash). */
  async stopCoordinator(slot: CoordinatorSlot, how: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    slot.expectExit = true;
    slot.accepting = false;
    if (!slot.proc) return;
    if (how === 'SIGKILL') {
      slot.proc.signal('SIGKILL');
      await slot.proc.exited;
    } else {
      await slot.proc.stop(10_000);
    }
  }

  /** Stops or kills an agent on purpose (not a crash). */
  async stopAgent(slot: AgentSlot, how: 'SIGKILL' | 'SIGTERM', graceMs = 10_000): Promise<void> {
    slot.expectExit = true;
    if (!slot.proc) return;
    if (how === 'SIGKILL') {
      slot.proc.signal('SIGKILL');
      await slot.proc.exited;
    } else {
      await slot.proc.stop(graceMs);
    }
  }

  /** Waits for restarts after crashes to finish. */
  async supervised(): Promise<void> {
    await Promise.all([...this.coordinators, ...this.agents].map((slot) => slot.restarting));
  }

  private recordCrash(name: string, code: number | string, proc: ManagedProcess): void {
    const lastLines = proc.lines.slice(-5).map((line) => JSON.stringify(line).slice(0, 500));
    this.crashes.push({ process: name, at: Date.now(), code: String(code), lastLines });
    this.log('UNPLANNED EXIT: restarting it as a supervisor would', { process: name, code });
  }

  /** Live coordinators (accepting), for the client's requests and the proxies' new connections. */
  liveCoordinators(): CoordinatorSlot[] {
    return this.coordinators.filter((slot) => slot.accepting && slot.proc !== undefined && slot.proc.child.exitCode === null && slot.proc.child.signalCode === null);
  }

  async addAgent(index: number): Promise<AgentSlot> {
    const agentId = `agent-${index}`;
    const slot: AgentSlot = {
      agentId,
      index,
      proxy: new FaultProxy(agentId, () => this.upstreamsFor(slot)),
      proc: undefined,
      incarnation: 0,
      preferred: undefined,
      expectExit: false,
      restarting: undefined,
    };
    await slot.proxy.listen();
    this.agents.push(slot);
    return slot;
  }

  /** Coordinator addresses an agent's proxy tries, its preferred one first. */
  private upstreamsFor(slot: AgentSlot): string[] {
    const live = this.liveCoordinators();
    const preferred = live.find((c) => c.name === slot.preferred);
    const others = live.filter((c) => c !== preferred);
    return [...(preferred ? [preferred] : []), ...others].map((c) => c.grpcAddress);
  }

  async startAgent(slot: AgentSlot): Promise<void> {
    slot.incarnation++;
    const proc = await startAgentProcess({
      coordinator: slot.proxy.address,
      agentId: slot.agentId,
      tasks: 'http',
      capacity: this.timings.agentCapacity,
      env: {
        KAIROS_HTTP_ALLOW_HOSTS: this.receiverHost,
        KAIROS_DRAIN_GRACE_MS: String(this.timings.drainGraceMs),
      },
    });
    slot.proc = proc;
    slot.expectExit = false;
    const name = `${slot.agentId}.${slot.incarnation}`;
    this.capture(proc, name);
    void proc.exited.then((code) => {
      if (slot.expectExit || this.closing || slot.proc !== proc) return;
      this.recordCrash(name, code, proc);
      slot.restarting = (async () => {
        await sleep(1_000);
        if (this.closing || slot.proc !== proc) return;
        await this.startAgent(slot).catch((error: unknown) => this.log('agent restart failed', { error: String(error) }));
      })().finally(() => (slot.restarting = undefined));
    });
  }

  /** From now on every exit is expected (the session is ending). */
  beginClosing(): void {
    this.closing = true;
  }

  isRunning(proc: ManagedProcess | undefined): boolean {
    return proc !== undefined && proc.child.exitCode === null && proc.child.signalCode === null;
  }

  /** Copies a process's output to a log file, and keeps its in-memory line list short. */
  private capture(proc: ManagedProcess, name: string): void {
    const out = createWriteStream(path.join(this.logDir, `${name}.log`), { flags: 'a' });
    this.logs.push(out);
    proc.child.stdout?.on('data', (chunk: string | Buffer) => out.write(chunk));
    proc.child.stderr?.on('data', (chunk: string | Buffer) => out.write(chunk));
    if (this.trimTimer === undefined) {
      this.trimTimer = setInterval(() => this.trimLines(), 5_000);
      this.trimTimer.unref();
    }
  }

  private trimLines(): void {
    const procs = [...this.coordinators.map((c) => c.proc), ...this.agents.map((a) => a.proc)];
    for (const proc of procs) {
      if (proc && proc.lines.length > 500) proc.lines.splice(0, proc.lines.length - 100);
    }
  }

  /**
   * Distinct leases (jobId, leaseGeneration) named by log lines carrying
   * `message`, in every log file whose name starts with `prefix`. An agent
   * re-sends an outcome until it is acknowledged, so one stale report can be
   * logged more than once; it is one attempt.
   */
  distinctLeasesInLogs(prefix: string, message: string): number {
    const leases = new Set<string>();
    for (const file of readdirSync(this.logDir)) {
      if (!file.startsWith(prefix)) continue;
      for (const line of readFileSync(path.join(this.logDir, file), 'utf8').split('\n')) {
        if (!line.includes(message)) continue;
        try {
          const parsed = JSON.parse(line) as { jobId?: string; leaseGeneration?: number };
          leases.add(`${parsed.jobId}#${parsed.leaseGeneration}`);
        } catch {
          leases.add(line);
        }
      }
    }
    return leases.size;
  }

  async closeLogs(): Promise<void> {
    clearInterval(this.trimTimer);
    await Promise.all(this.logs.map((out) => new Promise<void>((resolve) => out.end(() => resolve()))));
  }
}

export interface AgentSlot {
  readonly agentId: string;
  readonly index: number;
  readonly proxy: FaultProxy;
  proc: ManagedProcess | undefined;
  incarnation: number;
  /** Name of the coordinator its proxy tries first. */
  preferred: string | undefined;
  expectExit: boolean;
  restarting: Promise<void> | undefined;
}

// ---------------------------------------------------------------------------
// process helpers

/** Every process whose parent chain leads to `pid` (read from /proc). */
export function descendantsOf(pid: number): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name is in parentheses and may contain spaces: parse after the last ')'.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(Number(entry), Number(fields[1]));
    } catch {
      // The process ended while we looked.
    }
  }
  const out: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    const parent = queue.shift()!;
    for (const [child, ppid] of parents) {
      if (ppid === parent) {
        out.push(child);
        queue.push(child);
      }
    }
  }
  return out;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
