/**
 * W9: one coordinator with many connected agents (issue 14's scale check).
 * Kairos only: the peers have no coordinator and no agent streams.
 *
 * Twice, on a fresh database: with the bench's real agents alone, then with
 * `simulated` more agents connected (sim-agents.ts: real AgentService streams
 * with real heartbeats, holding nothing, serving a task no job has). Each
 * time: the coordinator's CPU over an idle minute-fraction (heartbeats only),
 * then a warm-up spike and a measured spike of `spikeJobs` no-op jobs due at
 * once, start lag at the handler as in W2, and every component's CPU during
 * the spike.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { Pool } from 'pg';
import { metricValue } from '@kairos/testing';
import { TASK_NOOP } from './common';
import { createDatabase, dropDatabase } from './cluster';
import { cpuDelta, cpuSnapshot, type CpuDelta } from './procs';
import { spike, type BenchContext, type SpikeResult } from './workloads';

export interface W9Result {
  simulatedAgents: number;
  /** Coordinator CPU while nothing is due, as a share of one core. */
  idleCoordinatorCpu: number;
  idleCpu: CpuDelta;
  spike: SpikeResult;
}

const IDLE_WINDOW_MS = 10_000;

function startSimulated(grpcAddress: string, count: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(__dirname, 'sim-agents.js')], {
    env: { ...process.env, SIM_AGENTS: String(count), SIM_COORDINATOR: grpcAddress },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${count} simulated agents not all welcomed within 120 s`)), 120_000);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      if (chunk.includes('"ready"')) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.once('exit', (code) => reject(new Error(`sim-agents exited with ${code}`)));
  });
}

export async function runW9(ctx: BenchContext, simulated: number, spikeJobs: number): Promise<W9Result[]> {
  const driver = ctx.drivers.kairos;
  const results: W9Result[] = [];
  for (const count of [0, simulated]) {
    const db = `b_w9_${count}`;
    const url = await createDatabase(ctx.cluster, db);
    const pool = new Pool({ connectionString: url, max: 2 });
    pool.on('error', () => undefined);
    let sim: ChildProcess | undefined;
    try {
      await driver.prepare(url);
      const system = await driver.start({
        url,
        variant: 'default',
        processes: ctx.sizes.processes,
        slotsPerProcess: ctx.sizes.slotsPerProcess,
        tasks: [TASK_NOOP],
        workload: 'noop',
        collector: ctx.collector,
        label: `w9-${count}`,
      });
      try {
        const address = system.coordinatorAddress!;
        if (count > 0) sim = await startSimulated(address.grpc, count);
        const connected = await metricValue(address.http, 'kairos_connected_agents');
        ctx.log(`  W9 ${count} simulated agents: ${connected} agent streams on the coordinator`);
        const before = await cpuSnapshot(system.coordinatorPid, system.workerPids(), ctx.cluster.pid);
        await new Promise((resolve) => setTimeout(resolve, IDLE_WINDOW_MS));
        const idleCpu = cpuDelta(before, await cpuSnapshot(system.coordinatorPid, system.workerPids(), ctx.cluster.pid));
        await spike(ctx, driver, pool, url, Math.min(200, spikeJobs), system); // warm-up
        const measured = await spike(ctx, driver, pool, url, spikeJobs, system);
        const result: W9Result = {
          simulatedAgents: count,
          idleCoordinatorCpu: Math.round((idleCpu.coordinatorS / idleCpu.wallS) * 1000) / 1000,
          idleCpu,
          spike: measured,
        };
        ctx.log(
          `  W9 ${count} simulated agents: idle coordinator CPU ${(result.idleCoordinatorCpu * 100).toFixed(1)} % of a core; ` +
            `spike of ${spikeJobs}: p50 ${measured.p50Ms} p99 ${measured.p99Ms} max ${measured.maxMs} ms; CPU s ${JSON.stringify(measured.cpu)}`,
        );
        results.push(result);
      } finally {
        if (sim) {
          const exited = new Promise((resolve) => sim!.once('exit', resolve));
          sim.kill('SIGTERM');
          await exited;
        }
        await system.stop();
      }
    } finally {
      await pool.end().catch(() => undefined);
      await dropDatabase(ctx.cluster, db);
    }
  }
  return results;
}
