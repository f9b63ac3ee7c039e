/**
 * The embedded server runs in a process group of its own, so a terminal's
 * Ctrl-C reaches only its owner (apps/cli/src/dev-stop.pg.test.ts shows why).
 * An owner that does not stop it itself must still take it along on the way
 * out: a process that dies of a signal it does not handle, or that exits on an
 * uncaught error. Real processes: the owner is a Node child running the built
 * library.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isAlive, waitFor } from '@kairos/testing';

const OWNER = `
const { startEmbeddedPostgres } = require(${JSON.stringify(path.resolve(__dirname, '../dist/index.js'))});
startEmbeddedPostgres({ dataDir: process.argv[1] }).then((server) => {
  process.stdout.write(String(server.pid) + '\\n');
  setInterval(() => undefined, 1000);
  if (process.argv[2] === 'throw') setImmediate(() => { throw new Error('owner failed'); });
  else process.kill(process.pid, process.argv[2]);
});
`;

async function runOwner(ending: string): Promise<{ serverPid: number; code: number | null; signal: NodeJS.Signals | null }> {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'kairos-embedded-owner-'));
  try {
    const child = spawn(process.execPath, ['-e', OWNER, dataDir, ending], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
      child.once('exit', (exitCode, exitSignal) => resolve([exitCode, exitSignal])),
    );
    const serverPid = Number(out.trim());
    expect(serverPid).toBeGreaterThan(0);
    await waitFor(() => !isAlive(serverPid), { timeoutMs: 30_000, description: `postgres ${serverPid} to stop after its owner ended` });
    return { serverPid, code, signal };
  } finally {
    rmSync(dataDir, { recursive: true, force: true });
  }
}

describe('embedded PostgreSQL and its owner process', () => {
  it.each(['SIGINT', 'SIGTERM'] as const)('an owner that dies of %s, which it does not handle, takes the server along', async (name) => {
    const { signal } = await runOwner(name);
    // Died of the signal, as it would have without the library's listener.
    expect(signal).toBe(name);
  }, 60_000);

  it('an owner that exits on an uncaught error takes the server along', async () => {
    const { code } = await runOwner('throw');
    expect(code).toBe(1);
  }, 60_000);
});
