/**
 * Built-in `exec` task: runs one program, without a shell.
 *
 * Payload: { argv: [program, ...args], env?: {NAME: value}, cwd? }
 *
 * - argv[0] must be on the agent's allow-list (KAIROS_EXEC_ALLOW), compared as
 *   an exact string: allow "/usr/bin/backup", and the payload must say
 *   "/usr/bin/backup". With an empty list the task is not registered at all.
 * - No shell: arguments reach the program verbatim ("$HOME; rm" stays text).
 * - The child's environment is the agent's minus every KAIROS_* variable (the
 *   agent's token is not the job's business), plus the payload's `env`.
 * - Exit code 0 is success; anything else a failure quoting the end of stderr.
 * - The child runs in its own process group, so a Ctrl-C aimed at the agent
 *   does not kill it mid-drain. On abort the group gets SIGTERM, then SIGKILL
 *   after `killGraceMs`.
 */
import { spawn } from 'node:child_process';
import { z } from 'zod';
import { parsePayload, type TaskContext, type TaskHandler } from '../sdk';

/** Bytes of stdout/stderr kept (the end of the stream). */
const TAIL_BYTES = 4_096;
const DEFAULT_KILL_GRACE_MS = 5_000;

const execPayload = z.strictObject({
  argv: z.array(z.string()).min(1, 'must name the program to run'),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().min(1).optional(),
});

export interface ExecResult {
  readonly exitCode: number;
  readonly stdoutTail: string;
}

export interface ExecTaskOptions {
  readonly allow: readonly string[];
  /** Between SIGTERM and SIGKILL on abort. */
  readonly killGraceMs?: number;
}

export function execTask(options: ExecTaskOptions): TaskHandler {
  const allowed = new Set(options.allow);
  const killGraceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  return async (payload: Record<string, unknown>, ctx: TaskContext): Promise<ExecResult> => {
    const request = parsePayload(execPayload, payload);
    const [program, ...args] = request.argv as [string, ...string[]];
    if (!allowed.has(program)) {
      throw new Error(`program "${program}" is not on this agent's exec allow-list (KAIROS_EXEC_ALLOW)`);
    }
    ctx.signal.throwIfAborted();
    return await runChild(program, args, childEnv(request.env), request.cwd, ctx.signal, killGraceMs);
  };
}

function childEnv(extra: Record<string, string> | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith('KAIROS_')) env[name] = value;
  }
  return { ...env, ...extra };
}

function runChild(
  program: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string | undefined,
  signal: AbortSignal,
  killGraceMs: number,
): Promise<ExecResult> {
  return new Promise<ExecResult>((resolve, reject) => {
    const child = spawn(program, args, { shell: false, env, cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const stdout = new Tail(TAIL_BYTES);
    const stderr = new Tail(TAIL_BYTES);
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    let killTimer: NodeJS.Timeout | undefined;
    const killGroup = (signalName: NodeJS.Signals): void => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, signalName);
      } catch {
        // Already gone.
      }
    };
    const onAbort = (): void => {
      killGroup('SIGTERM');
      killTimer = setTimeout(() => killGroup('SIGKILL'), killGraceMs);
      killTimer.unref();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const cleanUp = (): void => {
      signal.removeEventListener('abort', onAbort);
      if (killTimer !== undefined) clearTimeout(killTimer);
    };
    child.once('error', (error) => {
      cleanUp();
      reject(new Error(`could not start "${program}": ${error.message}`, { cause: error }));
    });
    child.once('close', (code, signalName) => {
      cleanUp();
      if (code === 0) {
        resolve({ exitCode: 0, stdoutTail: stdout.text() });
        return;
      }
      const how = code === null ? `was killed by ${signalName ?? 'a signal'}` : `exited with code ${code}`;
      const tail = stderr.text().trim();
      reject(new Error(`"${program}" ${how}${tail === '' ? '' : `; stderr: ${tail}`}`));
    });
  });
}

/** Keeps the last `limit` bytes of a stream. */
class Tail {
  private chunks: Buffer[] = [];
  private size = 0;

  constructor(private readonly limit: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size - (this.chunks[0]?.length ?? 0) >= this.limit && this.chunks.length > 1) {
      this.size -= this.chunks.shift()?.length ?? 0;
    }
  }

  text(): string {
    const all = Buffer.concat(this.chunks);
    return all.subarray(Math.max(0, all.length - this.limit)).toString('utf8');
  }
}
