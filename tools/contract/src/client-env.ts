/**
 * What the contract tests run besides Node: a Python virtualenv, Go tools
 * (the protoc plugins, grpcurl, helm, kubeconform) and the newest LTS Node,
 * made from the registries by tools/scripts/client-env.mjs (once per
 * checkout), and a way to run a foreign test runner to completion.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '../../..');

export interface ClientEnv {
  /** The virtualenv's python. */
  python: string;
  /** The virtualenv's bin folder (pytest, st). */
  bin: string;
  /** protoc-gen-go, protoc-gen-go-grpc, grpcurl, helm, kubeconform. */
  goBin: string;
  /** The newest LTS Node.js binary. */
  nodeLts: string;
}

export interface Finished {
  code: number | null;
  output: string;
}

/** Runs a command to its end, collecting stdout and stderr together (never throws on a non-zero exit). */
export function runToEnd(command: string, args: string[], options: { cwd?: string; env?: Record<string, string> } = {}): Promise<Finished> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** Makes (or finds) the Python virtualenv and Go plugins. */
export async function clientEnv(): Promise<ClientEnv> {
  const done = await runToEnd(process.execPath, ['tools/scripts/client-env.mjs']);
  if (done.code !== 0) throw new Error(`tools/scripts/client-env.mjs failed:\n${done.output}`);
  const json = done.output.trim().split('\n').pop() ?? '';
  return JSON.parse(json) as ClientEnv;
}

/** Fails with the runner's whole output when it did not pass. */
export function expectPassed(what: string, finished: Finished): void {
  if (finished.code !== 0) throw new Error(`${what} failed (exit ${finished.code}):\n${finished.output}`);
}
