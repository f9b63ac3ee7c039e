/**
 * Helpers for tests that run the COMPILED agent (dist/) in a child process:
 * the worker thread can only load compiled JavaScript. Build first with
 * `npx tsc -b apps/agent`; a missing or stale build fails the test with that
 * instruction rather than testing old code.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

export const AGENT_ROOT = path.join(__dirname, '..', '..');
export const DIST = path.join(AGENT_ROOT, 'dist');
const SRC = path.join(AGENT_ROOT, 'src');

/** Throws unless dist/ holds an up-to-date build of every non-test source file. */
export function assertFreshBuild(): void {
  const stale: string[] = [];
  const visit = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'test-support') visit(full);
        continue;
      }
      if (!entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts')) continue;
      const built = path.join(DIST, path.relative(SRC, full)).replace(/\.ts$/, '.js');
      if (!existsSync(built) || statSync(built).mtimeMs < statSync(full).mtimeMs) stale.push(path.relative(SRC, full));
    }
  };
  visit(SRC);
  if (stale.length > 0) {
    throw new Error(`apps/agent/dist is missing or stale (${stale.join(', ')}): run \`npx tsc -b apps/agent\` first`);
  }
}

export interface ChildRun {
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILLs the child if it is still running. */
  readonly kill: () => Promise<void>;
}

export function runNode(args: string[], env: NodeJS.ProcessEnv): ChildRun {
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
