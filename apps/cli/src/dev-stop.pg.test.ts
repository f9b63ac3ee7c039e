/**
 * Ctrl-C on `npm start` (`kairos dev`), with real processes: the terminal
 * signals its whole foreground process group, and the embedded PostgreSQL
 * must not be part of it. It used to be: PostgreSQL took the SIGINT as a fast
 * shutdown while the agent was still draining, the outcome of the job that was
 * running could not be recorded, and the job ran again after the next start.
 * Here the stack runs in a process group of its own, as in a terminal, with a
 * job in its handler (an http call held open) when the group gets SIGINT.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { restClient, spawnProgram, startHeldCalls, stopAll, type HeldCalls, type ManagedProcess } from '@kairos/testing';

const CLI = path.resolve(__dirname, '../bin/kairos.js');

/** `kairos dev` on free ports, leader of its own process group (as a terminal's foreground job), on its embedded PostgreSQL. */
function startDev(dataDir: string, env: Record<string, string>): ManagedProcess {
  return spawnProgram('kairos-dev', process.execPath, [CLI, 'dev', '--http-port', '0', '--grpc-port', '0'], { DATABASE_URL: undefined, KAIROS_DATA_DIR: dataDir, ...env }, { detached: true });
}

function postmasterPid(dataDir: string): number | undefined {
  const file = path.join(dataDir, 'pg', 'postmaster.pid');
  return existsSync(file) ? Number(readFileSync(file, 'utf8').split('\n')[0]) : undefined;
}

describe('kairos dev: Ctrl-C', () => {
  let dataDir: string;
  let held: HeldCalls;
  let stack: ManagedProcess | undefined;

  beforeAll(async () => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'kairos-dev-stop-'));
    held = await startHeldCalls();
  });
  afterAll(async () => {
    held.release();
    // Only what this test started: its process group, and a PostgreSQL left in its folder.
    if (stack && stack.child.exitCode === null && stack.child.signalCode === null) process.kill(-stack.pid, 'SIGKILL');
    await stopAll();
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
    const ready = await stack.waitForLine((line) => line.msg === 'coordinator ready', 60_000);
    await stack.waitForLine((line) => line.msg === 'connected to the coordinator', 30_000);
    const api = restClient(String(ready.httpUrl), readFileSync(path.join(dataDir, 'dev-token'), 'utf8').trim());
    const created = await api.createJob({ task: 'http', runAt: new Date().toISOString(), payload: { url: held.url('/running') } });
    expect(created.status).toBe(201);
    const jobId = created.body.jobId as string;
    await held.arrived();

    // The terminal's Ctrl-C: SIGINT to every process of the foreground group.
    process.kill(-stack.pid, 'SIGINT');
    await stack.waitForLine((line) => String(line.msg).includes('waiting for running jobs'), 30_000);
    held.release();
    expect(await stack.exited).toBe(0);
    expect(postmasterPid(dataDir)).toBeUndefined();
    expect(stack.lines.map((line) => JSON.stringify(line)).filter((line) => line.includes('recording outcomes failed') || line.includes('database unavailable'))).toEqual([]);

    // The next start finds the run recorded: it is not run again.
    stack = startDev(dataDir, {});
    const again = await stack.waitForLine((line) => line.msg === 'coordinator ready', 60_000);
    const next = restClient(String(again.httpUrl), readFileSync(path.join(dataDir, 'dev-token'), 'utf8').trim());
    expect((await next.runs(jobId)).body.runs.map((run) => run.outcome)).toEqual(['SUCCEEDED']);
    expect((await next.getJob(jobId)).body.state).toBe('COMPLETED');
    expect(held.calls).toHaveLength(1);
    process.kill(-stack.pid, 'SIGINT');
    expect(await stack.exited).toBe(0);
  }, 120_000);
});
