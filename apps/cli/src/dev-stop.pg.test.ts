/**
 * Ctrl-C on `npm start` (`kairos dev`), with real processes: the terminal
 * signals its whole foreground process group, and the embedded PostgreSQL
 * must not be part of it. It used to be: PostgreSQL took the SIGINT as a fast
 * shutdown while the agent was still draining, the outcome of the job that was
 * running could not be recorded, and the job ran again after the next start.
 * Here the stack runs in a process group of its own, as in a terminal, with a
 * job in its handler (an http call held open) when the group gets SIGINT.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { restClient, startHeldCalls, type HeldCalls } from '@kairos/testing';

const CLI = path.resolve(__dirname, '../bin/kairos.js');

interface Stack {
  child: ChildProcess;
  lines: string[];
  exited: Promise<number | null>;
  waitForLine(match: (line: string) => boolean, timeoutMs: number): Promise<string>;
}

/** `kairos dev` on free ports, leader of its own process group (as a terminal's foreground job). */
function startDev(dataDir: string, env: Record<string, string>): Stack {
  const { DATABASE_URL: _ignored, ...inherited } = process.env;
  const child = spawn(process.execPath, [CLI, 'dev', '--http-port', '0', '--grpc-port', '0'], {
    detached: true,
    env: { ...inherited, KAIROS_DATA_DIR: dataDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const waiters: Array<{ match: (line: string) => boolean; resolve: (line: string) => void }> = [];
  let partial = '';
  const onData = (chunk: string) => {
    const parts = (partial + chunk).split('\n');
    partial = parts.pop()!;
    for (const line of parts) {
      lines.push(line);
      for (const waiter of [...waiters]) {
        if (waiter.match(line)) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(line);
        }
      }
    }
  };
  child.stdout!.setEncoding('utf8').on('data', onData);
  child.stderr!.setEncoding('utf8').on('data', onData);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    child,
    lines,
    exited,
    waitForLine: (match, timeoutMs) => {
      const seen = lines.find(match);
      if (seen !== undefined) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching line within ${timeoutMs} ms; output:\n${lines.slice(-30).join('\n')}`)), timeoutMs);
        waiters.push({ match, resolve: (line) => (clearTimeout(timer), resolve(line)) });
      });
    },
  };
}

function postmasterPid(dataDir: string): number | undefined {
  const file = path.join(dataDir, 'pg', 'postmaster.pid');
  return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : undefined;
}

describe('kairos dev: Ctrl-C', () => {
  let dataDir: string;
  let held: HeldCalls;
  let stack: Stack | undefined;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'kairos-dev-stop-'));
    held = await startHeldCalls();
  });
  afterAll(async () => {
    held.release();
    // Only what this test started: its process group, and a PostgreSQL left in its folder.
    if (stack && stack.child.exitCode === null && stack.child.signalCode === null) process.kill(-stack.child.pid!, 'SIGKILL');
    const pid = postmasterPid(dataDir);
    if (pid !== undefined) {
      try {
        process.kill(pid, 'SIGINT');
      } catch {
        // already gone
      }
    }
    await held.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('drains the running job, records its run, then stops PostgreSQL, and exits 0', async () => {
    stack = startDev(dataDir, { KAIROS_HTTP_ALLOW_HOSTS: `127.0.0.1:${held.port}` });
    const ready = JSON.parse(await stack.waitForLine((line) => line.includes('"coordinator ready"'), 60_000)) as { httpUrl: string };
    await stack.waitForLine((line) => line.includes('"connected to the coordinator"'), 30_000);
    const api = restClient(ready.httpUrl, readFileSync(path.join(dataDir, 'dev-token'), 'utf8').trim());
    const created = await api.createJob({ task: 'http', runAt: new Date().toISOString(), payload: { url: held.url('/running') } });
    expect(created.status).toBe(201);
    const jobId = created.body.jobId as string;
    await held.arrived();

    // The terminal's Ctrl-C: SIGINT to every process of the foreground group.
    process.kill(-stack.child.pid!, 'SIGINT');
    await stack.waitForLine((line) => line.includes('waiting for running jobs'), 30_000);
    held.release();
    expect(await stack.exited).toBe(0);
    expect(postmasterPid(dataDir)).toBeUndefined();
    expect(stack.lines.filter((line) => line.includes('recording outcomes failed') || line.includes('database unavailable'))).toEqual([]);

    // The next start finds the run recorded: it is not run again.
    stack = startDev(dataDir, {});
    const again = JSON.parse(await stack.waitForLine((line) => line.includes('"coordinator ready"'), 60_000)) as { httpUrl: string };
    const next = restClient(again.httpUrl, readFileSync(path.join(dataDir, 'dev-token'), 'utf8').trim());
    expect((await next.runs(jobId)).body.runs.map((run) => run.outcome)).toEqual(['SUCCEEDED']);
    expect((await next.getJob(jobId)).body.state).toBe('COMPLETED');
    expect(held.calls).toHaveLength(1);
    process.kill(-stack.child.pid!, 'SIGINT');
    expect(await stack.exited).toBe(0);
  }, 120_000);
});
