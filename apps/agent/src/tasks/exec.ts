/**
 * Built-in `exec` task: runs one program, without a shell.
 *
 * Payload: { argv: [program, ...args], env?: {NAME: value}, cwd? }
 *
 * - argv[0] must be on the agent's allow-list (KAIROS_EXEC_ALLOW) of absolute
 *   paths, compared as an exact string: allow "/usr/bin/backup", and the
 *   payload must say "/usr/bin/backup". With an empty list the task is not
 *   registered at all.
 * - No shell: arguments reach the program verbatim ("$HOME; rm" stays text).
 * - The child starts from a minimal environment, never the agent's (which may
 *   hold DATABASE_URL, tokens, cloud credentials): a fixed PATH, LANG, the
 *   run's KAIROS_JOB_ID / KAIROS_RUN_ID / KAIROS_ATTEMPT / KAIROS_FENCING_TOKEN
 *   (for idempotent handlers), plus the payload's `env`. The payload may not
 *   set PATH, loader or interpreter-injection variables (LD_*, DYLD_*,
 *   NODE_OPTIONS, PYTHONPATH, BASH_ENV, ...) or KAIROS_*: a job that may pick
 *   the program's shared libraries picks what runs.
 * - `cwd` must resolve (symlinks followed) to a folder under the agent's
 *   KAIROS_EXEC_CWD_ROOT; without one, the payload may not choose a cwd and
 *   the child runs in the agent's working folder.
 * - Exit code 0 is success; anything else a failure quoting the end of stderr.
 * - The child runs in its own process group, so a Ctrl-C aimed at the agent
 *   does not kill it mid-drain. On abort the group gets SIGTERM, then SIGKILL
 *   after `killGraceMs`.
 */
import { spawn } from 'node:child_process';
import { realpathSync } from 'node:fs';
import path from 'node:path';
import { execPayload } from '@kairos/tasks';
import { parsePayload, type TaskContext, type TaskHandler } from '../sdk';

/** Bytes of stdout/stderr kept (the end of the stream). */
const TAIL_BYTES = 4_096;
const DEFAULT_KILL_GRACE_MS = 5_000;

/** The child's whole environment before the payload's `env`. */
const BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface ExecResult {
  readonly exitCode: number;
  readonly stdoutTail: string;
}

export interface ExecTaskOptions {
  /** Absolute paths of the programs jobs may run. */
  readonly allow: readonly string[];
  /** Folder a payload's `cwd` must lie under (KAIROS_EXEC_CWD_ROOT); unset: payloads may not choose a cwd. */
  readonly cwdRoot?: string | undefined;
  /** Between SIGTERM and SIGKILL on abort. */
  readonly killGraceMs?: number;
}

export function execTask(options: ExecTaskOptions): TaskHandler {
  const relative = options.allow.filter((program) => !path.isAbsolute(program));
  if (relative.length > 0) {
    throw new Error(`exec allow-list entries must be absolute paths (got ${relative.map((p) => JSON.stringify(p)).join(', ')})`);
  }
  if (options.cwdRoot !== undefined && !path.isAbsolute(options.cwdRoot)) {
    throw new Error(`the exec cwd root must be an absolute path (got ${JSON.stringify(options.cwdRoot)})`);
  }
  const allowed = new Set(options.allow);
  const killGraceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  return async (payload: Record<string, unknown>, ctx: TaskContext): Promise<ExecResult> => {
    const request = parsePayload(execPayload, payload);
    const [program, ...args] = request.argv as [string, ...string[]];
    if (!allowed.has(program)) {
      throw new Error(`program "${program}" is not on this agent's exec allow-list (KAIROS_EXEC_ALLOW)`);
    }
    const cwd = request.cwd === undefined ? undefined : checkedCwd(request.cwd, options.cwdRoot);
    ctx.signal.throwIfAborted();
    return await runChild(program, args, childEnv(request.env, ctx), cwd, ctx.signal, killGraceMs);
  };
}

/** The child's environment: a minimal base, the run's identity, the payload's variables. Never the agent's. */
function childEnv(extra: Record<string, string> | undefined, ctx: TaskContext): NodeJS.ProcessEnv {
  return {
    PATH: BASE_PATH,
    LANG: 'C.UTF-8',
    ...extra,
    KAIROS_JOB_ID: ctx.jobId,
    KAIROS_RUN_ID: ctx.runId,
    KAIROS_ATTEMPT: String(ctx.attempt),
    KAIROS_FENCING_TOKEN: String(ctx.fencingToken),
  };
}

/** The payload's cwd, resolved with symlinks followed, if it lies under `root`. */
function checkedCwd(cwd: string, root: string | undefined): string {
  if (root === undefined) {
    throw new Error('invalid payload field "cwd": this agent has no KAIROS_EXEC_CWD_ROOT, so jobs may not choose a working folder');
  }
  let resolved: string;
  let base: string;
  try {
    base = realpathSync(root);
    resolved = realpathSync(path.resolve(base, cwd));
  } catch (error: unknown) {
    throw new Error(`invalid payload field "cwd": ${(error as Error).message}`);
  }
  if (resolved !== base && !resolved.startsWith(base + path.sep)) {
    throw new Error(`invalid payload field "cwd": ${JSON.stringify(cwd)} is outside ${base}`);
  }
  return resolved;
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
