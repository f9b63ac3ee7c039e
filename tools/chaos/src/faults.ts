/**
 * The fault plan and the faults themselves.
 *
 * Plan: kinds come from seeded shuffles of the whole list (every kind once per
 * round, so long sessions cover all of them evenly); in the first round an
 * agent pause is moved into the first three, so even a one-minute session
 * exercises the fence. A fault is injected every 10 ± 5 s, but never while the
 * previous one is still in effect or within 6 s of its heal, so each fault's
 * recovery is measured on its own.
 *
 * Targets: agent faults hit the agent holding the most leases at that moment
 * (ties by the seed), so a fault always has work to disrupt.
 */
import type { Pool } from 'pg';
import { sleep, type AgentSlot, type Cluster } from './cluster';
import type { FaultKind, HFault } from './history';
import type { Rng } from './rng';
import type { Workload } from './workload';

export const FAULT_KINDS: readonly FaultKind[] = [
  'agent-kill',
  'agent-pause',
  'net-drop',
  'net-delay',
  'net-reset',
  'net-oneway',
  'coordinator-kill',
  'coordinator-second',
  'postgres-crash',
  'postgres-pause',
  'cancel-storm',
  'predispatch-kill',
  'predispatch-cancel',
];

/**
 * Quiet time after a heal before the next fault: longer than the recovery
 * bound, so each fault's recovery is over (or has visibly failed) before the
 * next one starts.
 */
const GAP_AFTER_HEAL_MS = 6_000;

export class FaultPlan {
  private queue: FaultKind[] = [];
  private round = 0;

  constructor(private readonly rng: Rng) {}

  next(): FaultKind {
    if (this.queue.length === 0) {
      this.queue = this.rng.shuffle(FAULT_KINDS);
      if (this.round === 0) {
        const at = this.queue.indexOf('agent-pause');
        if (at > 2) {
          this.queue.splice(at, 1);
          this.queue.splice(this.rng.int(0, 2), 0, 'agent-pause');
        }
      }
      this.round++;
    }
    return this.queue.shift()!;
  }

  /** Delay from one injection to the next: 10 ± 5 s. */
  interval(): number {
    return this.rng.between(5_000, 15_000);
  }
}

export interface FaultContext {
  cluster: Cluster;
  workload: Workload;
  pool: Pool;
  rng: Rng;
  log: (message: string, fields?: Record<string, unknown>) => void;
}

/**
 * Runs faults until `until` (no fault starts that could not heal by then) and
 * returns the fault log once the last one has healed.
 */
export async function runFaults(context: FaultContext, plan: FaultPlan, until: number): Promise<HFault[]> {
  const faults: HFault[] = [];
  let nextAt = Date.now() + plan.interval();
  for (;;) {
    if (nextAt + 12_000 > until) break;
    await sleep(Math.max(0, nextAt - Date.now()));
    const kind = plan.next();
    const injectionPlanned = Date.now();
    let fault: HFault;
    try {
      fault = await inject(context, kind);
    } catch (error: unknown) {
      context.log('fault failed', { kind, error: error instanceof Error ? error.stack : String(error) });
      throw error;
    }
    faults.push(fault);
    context.log('fault healed', { ...fault, tookMs: fault.healedAt - fault.injectedAt });
    nextAt = Math.max(injectionPlanned + plan.interval(), fault.healedAt + GAP_AFTER_HEAL_MS);
  }
  return faults;
}

async function inject(context: FaultContext, kind: FaultKind): Promise<HFault> {
  const { cluster, rng } = context;
  // A process that crashed on its own is being restarted: let that finish first.
  await cluster.supervised();
  switch (kind) {
    case 'agent-kill': {
      const agent = await busiestAgent(context);
      const injectedAt = Date.now();
      await cluster.stopAgent(agent, 'SIGKILL');
      context.log('agent killed', { agent: agent.agentId });
      await sleep(rng.between(1_000, 3_000));
      await cluster.startAgent(agent);
      return { kind, target: agent.agentId, detail: 'kill -9, restarted', injectedAt, backAt: injectedAt, healedAt: Date.now() };
    }
    case 'agent-pause': {
      const agent = await busiestAgent(context);
      const holdMs = cluster.timings.leaseMs + rng.between(1_000, 3_000);
      const injectedAt = Date.now();
      agent.proc!.signal('SIGSTOP');
      context.log('agent stopped', { agent: agent.agentId, holdMs: Math.round(holdMs) });
      await sleep(holdMs);
      agent.proc!.signal('SIGCONT');
      return {
        kind,
        target: agent.agentId,
        detail: `SIGSTOP for ${Math.round(holdMs)} ms (lease ${cluster.timings.leaseMs} ms), then SIGCONT`,
        injectedAt,
        backAt: injectedAt,
        healedAt: Date.now(),
      };
    }
    case 'net-drop':
    case 'net-delay':
    case 'net-reset':
    case 'net-oneway': {
      const agent = await busiestAgent(context);
      let holdMs: number;
      let detail: string;
      if (kind === 'net-drop') {
        holdMs = rng.between(4_000, 7_000);
        detail = 'blackhole both ways';
        agent.proxy.setMode({ kind: 'drop' });
      } else if (kind === 'net-delay') {
        holdMs = rng.between(4_000, 8_000);
        const ms = Math.round(rng.between(300, 1_500));
        detail = `${ms} ms added each way`;
        agent.proxy.setMode({ kind: 'delay', ms });
      } else if (kind === 'net-reset') {
        holdMs = rng.between(500, 3_000);
        detail = 'connections reset, new ones refused with RST';
        agent.proxy.setMode({ kind: 'reset' });
      } else {
        holdMs = rng.between(4_000, 7_000);
        const blocked = rng.chance(0.5) ? 'up' : 'down';
        detail = blocked === 'up' ? 'agent -> coordinator blackholed' : 'coordinator -> agent blackholed';
        agent.proxy.setMode({ kind: 'oneway', blocked });
      }
      const injectedAt = Date.now();
      context.log('network fault', { agent: agent.agentId, kind, detail, holdMs: Math.round(holdMs) });
      await sleep(holdMs);
      agent.proxy.setMode({ kind: 'pass' });
      return { kind, target: agent.agentId, detail: `${detail} for ${Math.round(holdMs)} ms`, injectedAt, backAt: injectedAt, healedAt: Date.now() };
    }
    case 'coordinator-kill': {
      await cluster.supervised();
      const live = cluster.liveCoordinators();
      if (live.length === 0) throw new Error('no coordinator is running');
      const victim = rng.pick(live);
      const othersUp = live.length > 1;
      const injectedAt = Date.now();
      await cluster.stopCoordinator(victim, 'SIGKILL');
      const downMs = rng.between(1_000, 3_000);
      context.log('coordinator killed', { coordinator: victim.name, othersUp, downMs: Math.round(downMs) });
      await sleep(downMs);
      await cluster.startCoordinator(victim);
      const readyAt = Date.now();
      return {
        kind,
        target: victim.name,
        detail: `kill -9, restarted on the same ports after ${Math.round(downMs)} ms (+ start-up)`,
        injectedAt,
        backAt: othersUp ? injectedAt : readyAt,
        healedAt: readyAt,
      };
    }
    case 'coordinator-second': {
      const second = cluster.coordinators.find((slot) => !cluster.isRunning(slot.proc));
      if (!second) throw new Error('no free coordinator slot');
      await cluster.startCoordinator(second);
      // Half the agents move over, as a Service rebalancing new connections would.
      const movers = cluster.agents.filter((agent) => agent.index % 2 === 0);
      const injectedAt = Date.now();
      for (const agent of movers) {
        agent.preferred = second.name;
        agent.proxy.resetAll();
      }
      const holdMs = rng.between(8_000, 15_000);
      context.log('second coordinator up', { coordinator: second.name, movers: movers.map((a) => a.agentId), holdMs: Math.round(holdMs) });
      await sleep(holdMs);
      const graceful = rng.chance(0.5);
      const stopAt = Date.now();
      for (const agent of movers) agent.preferred = cluster.coordinators[0]!.name;
      await cluster.stopCoordinator(second, graceful ? 'SIGTERM' : 'SIGKILL');
      const stoppedAt = Date.now();
      // Injected when agents were moved to the second coordinator; "back" when it was
      // stopped (the first one serves throughout): recovery is what waited past the stop.
      return {
        kind,
        target: second.name,
        detail: `started, served ${movers.length} agents for ${Math.round(holdMs)} ms, then ${graceful ? 'SIGTERM (drain)' : 'kill -9'}`,
        injectedAt,
        backAt: stopAt,
        healedAt: stoppedAt,
      };
    }
    case 'postgres-crash': {
      const injectedAt = Date.now();
      await cluster.postgres.crash();
      const downMs = rng.between(1_000, 4_000);
      await sleep(downMs);
      await cluster.postgres.start();
      const upAt = Date.now();
      return {
        kind,
        target: 'postgres',
        detail: `SIGKILL of postmaster and backends, restarted after ${Math.round(downMs)} ms (+ crash recovery: ${Math.round(upAt - injectedAt - downMs)} ms)`,
        injectedAt,
        backAt: upAt,
        healedAt: upAt,
      };
    }
    case 'postgres-pause': {
      const holdMs = rng.between(2_000, 5_000);
      const injectedAt = Date.now();
      cluster.postgres.pause();
      await sleep(holdMs);
      cluster.postgres.resume();
      const upAt = Date.now();
      return { kind, target: 'postgres', detail: `SIGSTOP of every PostgreSQL process for ${Math.round(holdMs)} ms`, injectedAt, backAt: upAt, healedAt: upAt };
    }
    case 'predispatch-kill': {
      // The agent holding the most pre-dispatched jobs, killed before it starts them: they must run
      // elsewhere once its leases expire, each once. Polls (bounded) until some agent holds one.
      for (let tries = 0; tries < 20 && (await preDispatched(context)).length === 0; tries++) await sleep(100);
      const { agent, leases } = await busiestAgentWithCount(context, 'pre-dispatched');
      const injectedAt = Date.now();
      await cluster.stopAgent(agent, 'SIGKILL');
      context.log('agent holding pre-dispatched jobs killed', { agent: agent.agentId, preDispatched: leases });
      await sleep(rng.between(1_000, 3_000));
      await cluster.startAgent(agent);
      return { kind, target: agent.agentId, detail: `kill -9 holding ${leases} pre-dispatched jobs, restarted`, injectedAt, backAt: injectedAt, healedAt: Date.now() };
    }
    case 'predispatch-cancel': {
      // Cancels of jobs that agents hold but have not started: 204 must mean they never run.
      const injectedAt = Date.now();
      let targets: string[] = [];
      for (let tries = 0; tries < 20 && targets.length === 0; tries++) {
        const known = new Set(context.workload.jobsAboutToRun(0, 5_000));
        targets = (await preDispatched(context)).map((job) => job.id).filter((id) => known.has(id));
        if (targets.length === 0) await sleep(100);
      }
      const wave = rng.shuffle(targets).slice(0, 20);
      const answers = await Promise.all(wave.map((id) => context.workload.cancel(id)));
      const tally = (status: number) => answers.filter((s) => s === status).length;
      const detail = `${answers.length} cancels of pre-dispatched jobs: ${tally(204)} x 204, ${tally(409)} x 409, ${answers.length - tally(204) - tally(409)} other`;
      context.log('pre-dispatched cancels', { detail });
      const doneAt = Date.now();
      return { kind, target: 'client', detail, injectedAt, backAt: doneAt, healedAt: doneAt };
    }
    case 'cancel-storm': {
      const injectedAt = Date.now();
      const first = context.workload.jobsAboutToRun(100, 1_500);
      const wave1 = rng.shuffle(first).slice(0, 30);
      const answers1 = await Promise.all(wave1.map((id) => context.workload.cancel(id)));
      await sleep(700);
      const wave2 = rng.shuffle(context.workload.jobsAboutToRun(0, 600)).slice(0, 20);
      const answers2 = await Promise.all(wave2.map((id) => context.workload.cancel(id)));
      const all = [...answers1, ...answers2];
      const tally = (status: number) => all.filter((s) => s === status).length;
      const detail = `${all.length} cancels of jobs due within 1.5 s: ${tally(204)} x 204, ${tally(409)} x 409, ${all.length - tally(204) - tally(409)} other`;
      context.log('cancel storm', { detail });
      const doneAt = Date.now();
      return { kind, target: 'client', detail, injectedAt, backAt: doneAt, healedAt: doneAt };
    }
  }
}

/** A CLAIMED job whose due instant is still ahead: pre-dispatched, held by its agent, not started. */
const PRE_DISPATCHED = "AND next_run_at > now() + interval '100 milliseconds'";

/** Jobs pre-dispatched right now, by holder. */
async function preDispatched(context: FaultContext): Promise<Array<{ id: string; owner: string }>> {
  const { rows } = await context.pool.query<{ id: string; owner: string }>(
    `SELECT id, lease_owner AS owner FROM jobs WHERE state = 'CLAIMED' ${PRE_DISPATCHED}`,
  );
  return rows;
}

/** The running agent holding the most leases (by the store), ties broken by the seed. */
async function busiestAgent(context: FaultContext): Promise<AgentSlot> {
  return (await busiestAgentWithCount(context, 'all')).agent;
}

/** The running agent holding the most leases (`pre-dispatched`: of jobs not due yet), and how many. */
async function busiestAgentWithCount(context: FaultContext, which: 'all' | 'pre-dispatched'): Promise<{ agent: AgentSlot; leases: number }> {
  const candidates = context.cluster.agents.filter((agent) => context.cluster.isRunning(agent.proc));
  if (candidates.length === 0) throw new Error('no running agent');
  const counts = new Map<string, number>();
  try {
    const { rows } = await context.pool.query<{ owner: string; n: string }>(
      `SELECT lease_owner AS owner, count(*) AS n FROM jobs WHERE state = 'CLAIMED' ${which === 'pre-dispatched' ? PRE_DISPATCHED : ''} GROUP BY lease_owner`,
    );
    for (const row of rows) counts.set(row.owner, Number(row.n));
  } catch (error: unknown) {
    context.log('could not count leases; picking an agent at random', { error: String(error) });
  }
  const shuffled = context.rng.shuffle(candidates);
  const agent = shuffled.reduce((best, slot) => ((counts.get(slot.agentId) ?? 0) > (counts.get(best.agentId) ?? 0) ? slot : best), shuffled[0]!);
  return { agent, leases: counts.get(agent.agentId) ?? 0 };
}
