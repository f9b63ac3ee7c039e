/**
 * CI's chaos gate: a one-minute session with a fixed seed, with real
 * processes, must end with verdict "pass". The harness is built first (it is
 * not part of the root build), then run as the documented command would run
 * it, writing its results to a temporary folder.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const MAIN = path.join(ROOT, 'tools', 'chaos', 'dist', 'main.js');

describe('chaos session (CI, 1 minute, seed 42)', () => {
  let out: string;

  beforeAll(() => {
    out = mkdtempSync(path.join(os.tmpdir(), 'kairos-chaos-ci-'));
    execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-b', 'tools/chaos'], {
      cwd: ROOT,
      stdio: 'pipe',
    });
  }, 120_000);

  afterAll(() => {
    rmSync(out, { recursive: true, force: true });
  });

  it('passes every invariant', async () => {
    const child = spawn(process.execPath, [MAIN, '--minutes', '1', '--seed', '42', '--out', out], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-20_000)));
    const code = await new Promise<number | null>((resolve) => child.on('exit', (exitCode) => resolve(exitCode)));

    // The report says what went wrong; make it part of the failure message (and the output, when there is none).
    const report = path.join(out, 'latest.json');
    if (!existsSync(report)) throw new Error(`the session wrote no report (exit ${code}):\n${stdout.slice(-5_000)}\n${stderr.slice(-5_000)}`);
    const summary = JSON.parse(readFileSync(report, 'utf8')) as Record<string, unknown>;
    expect({ verdict: summary.verdict, code, report: summary.verdict === 'pass' ? '' : stdout + stderr.slice(-5_000) }).toEqual({
      verdict: 'pass',
      code: 0,
      report: '',
    });
    expect(summary).toMatchObject({ seed: 42, minutes: 1, missed: 0, validOverlaps: 0, staleAccepted: 0, lost: 0, stuck: 0 });
    expect(summary.staleAttempted).toBeGreaterThan(0);
    expect(summary.occurrences).toBeGreaterThan(500);
  }, 240_000);
});
