/**
 * Prometheus metrics, one registry per coordinator instance (tests run several
 * in one process). `kairos_jobs_demand` is the autoscaling signal (KEDA's
 * prometheus scaler reads it): it counts work before it is late, where CPU
 * only rises once the backlog exists, and the jobs running now, so agents are
 * not scaled down under long jobs.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AgentView } from './api/views';

/** How late DUE jobs of a task must be to count as overdue in kairos_task_overdue_jobs. */
export const OVERDUE_GRACE_MS = 30_000;

/** What the cluster-wide gauges read at scrape time (each at most once a second). */
export interface MetricSources {
  countDueNextMinute: () => Promise<number>;
  /** DUE jobs due within the demand horizon plus CLAIMED jobs, per namespace and task. */
  demand: () => Promise<Array<{ namespace: string; task: string; jobs: number }>>;
  /** The horizon `demand` looks ahead (KAIROS_DEMAND_HORIZON_MS), for the help text. */
  demandHorizonMs: number;
  overdue: (graceMs: number) => Promise<{ oldestMs: number | null; tasks: Array<{ namespace: string; task: string; jobs: number }> }>;
  /** Every agent of the cluster (presence). */
  agents: () => Promise<AgentView[]>;
}

export interface Metrics {
  registry: Registry;
  claims: Counter;
  dispatchLag: Histogram;
  renewLatency: Histogram;
  renewals: Counter;
  lostLeases: Counter;
  staleReports: Counter;
  leasesExpired: Counter;
  connectedAgents: Gauge;
  foreignLeaseRefusals: Counter<'operation'>;
  agentQuarantines: Counter;
  /** Read at scrape time for kairos_agents_quarantined (the dispatcher sets it). */
  countQuarantined: () => number;
  authFailures: Counter;
  abortsRequested: Counter;
  payloadSchemasRefused: Counter;
  abortRevokes: Counter;
  preDispatched: Counter;
  withdrawals: Counter<'result'>;
  retentionDeleted: Counter<'table'>;
  runsFinished: Counter<'outcome'>;
  jobsDead: Counter;
  occurrencesSkipped: Counter;
  agentsRebalanced: Counter;
  webhookDeliveries: Counter<'result'>;
}

/** A read shared by every scrape within a second. */
function cachedFor<T>(ms: number, read: () => Promise<T>): () => Promise<T> {
  let cached: { at: number; value: Promise<T> } | undefined;
  return () => {
    if (!cached || Date.now() - cached.at > ms) {
      const value = read();
      cached = { at: Date.now(), value };
      value.catch(() => {
        if (cached?.value === value) cached = undefined;
      });
    }
    return cached.value;
  };
}

export function createMetrics(sources: MetricSources): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'kairos_process_' });
  // Several scrapers (or a scraper and a dashboard) within a second share one read.
  const dueNextMinute = cachedFor(1_000, sources.countDueNextMinute);
  const overdue = cachedFor(1_000, () => sources.overdue(OVERDUE_GRACE_MS));
  const agents = cachedFor(1_000, sources.agents);
  const demand = cachedFor(1_000, sources.demand);
  new Gauge({
    name: 'kairos_jobs_due_next_minute',
    help: 'DUE jobs whose next_run_at is within the next 60 s (by the database clock); scale agents on this',
    registers: [registry],
    async collect() {
      this.set(await dueNextMinute());
    },
  });
  // The gauges below read the whole cluster: every coordinator reports the same value (alert on max()).
  new Gauge({
    name: 'kairos_jobs_demand',
    help: `Work for agents per namespace and task: DUE jobs due within ${sources.demandHorizonMs / 1000} s (KAIROS_DEMAND_HORIZON_MS) or late, plus CLAIMED jobs (running). Cluster-wide (the 100 busiest pairs); scale agents on max() of it`,
    labelNames: ['namespace', 'task'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const { namespace, task, jobs } of await demand()) this.set({ namespace, task }, jobs);
    },
  });
  new Gauge({
    name: 'kairos_oldest_overdue_job_seconds',
    help: 'How late the most overdue DUE job is (database clock); 0 when none is late. Cluster-wide',
    registers: [registry],
    async collect() {
      this.set(((await overdue()).oldestMs ?? 0) / 1000);
    },
  });
  new Gauge({
    name: 'kairos_task_overdue_jobs',
    help: `DUE jobs more than ${OVERDUE_GRACE_MS / 1000} s late, per namespace and task (the 100 most overdue tasks). Cluster-wide`,
    labelNames: ['namespace', 'task'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const { namespace, task, jobs } of (await overdue()).tasks) this.set({ namespace, task }, jobs);
    },
  });
  new Gauge({
    name: 'kairos_task_agents',
    help: 'Agents per namespace, task and state (ready, draining, quarantined), cluster-wide; a task with overdue jobs and no agent shows ready 0',
    labelNames: ['namespace', 'task', 'state'],
    registers: [registry],
    async collect() {
      this.reset();
      const counts = new Map<string, { namespace: string; task: string; ready: number; draining: number; quarantined: number }>();
      const entry = (namespace: string, task: string) => {
        const key = `${namespace}\u0000${task}`;
        let found = counts.get(key);
        if (!found) counts.set(key, (found = { namespace, task, ready: 0, draining: 0, quarantined: 0 }));
        return found;
      };
      for (const { namespace, task } of (await overdue()).tasks) entry(namespace, task);
      for (const agent of await agents()) {
        const state = agent.draining ? 'draining' : agent.quarantinedUntil !== null ? 'quarantined' : 'ready';
        for (const task of agent.tasks) entry(agent.namespace, task)[state] += 1;
      }
      for (const { namespace, task, ...states } of counts.values()) {
        for (const [state, value] of Object.entries(states)) this.set({ namespace, task, state }, value);
      }
    },
  });
  const metrics: Metrics = {
    registry,
    countQuarantined: () => 0,
    claims: new Counter({ name: 'kairos_claims_total', help: 'Jobs claimed (leases granted) by this coordinator', registers: [registry] }),
    dispatchLag: new Histogram({
      name: 'kairos_dispatch_lag_seconds',
      help: 'Claim time minus due time, per claimed job',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [registry],
    }),
    renewLatency: new Histogram({
      name: 'kairos_heartbeat_renew_seconds',
      help: 'Heartbeat received to its renewal committed (RenewReply ready), per heartbeat; agents self-fence when this nears the trust margin',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    renewals: new Counter({ name: 'kairos_lease_renewals_total', help: 'Leases renewed', registers: [registry] }),
    lostLeases: new Counter({
      name: 'kairos_leases_lost_total',
      help: 'Renewals refused because the lease had moved on (agent told to abort)',
      registers: [registry],
    }),
    staleReports: new Counter({
      name: 'kairos_stale_reports_total',
      help: 'Outcomes rejected by the fence (reported under an old lease generation)',
      registers: [registry],
    }),
    leasesExpired: new Counter({
      name: 'kairos_leases_expired_total',
      help: 'Leases the reaper found expired (worker lost); their runs are LEASE_EXPIRED',
      registers: [registry],
    }),
    connectedAgents: new Gauge({ name: 'kairos_connected_agents', help: 'Agent streams connected to this coordinator', registers: [registry] }),
    foreignLeaseRefusals: new Counter({
      name: 'kairos_foreign_lease_refusals_total',
      help: 'Renewals, outcomes and releases refused because the lease is held by another agent or token',
      labelNames: ['operation'],
      registers: [registry],
    }),
    agentQuarantines: new Counter({
      name: 'kairos_agent_quarantines_total',
      help: 'Agents quarantined for taking leases and never renewing them',
      registers: [registry],
    }),
    authFailures: new Counter({
      name: 'kairos_auth_failures_total',
      help: 'Calls and agent streams refused for a missing or invalid token (unauthenticated), both transports',
      registers: [registry],
    }),
    payloadSchemasRefused: new Counter({
      name: 'kairos_payload_schemas_refused_total',
      help: 'Payload schemas agents advertised that the coordinator refused (too large, invalid, unsafe pattern)',
      registers: [registry],
    }),
    abortsRequested: new Counter({
      name: 'kairos_aborts_requested_total',
      help: 'Running runs an operator asked to abort (POST /jobs/{id}/abort, AbortRun), through this coordinator',
      registers: [registry],
    }),
    preDispatched: new Counter({
      name: 'kairos_predispatched_total',
      help: 'Jobs this coordinator claimed ahead of their due instant and handed to agents to start then',
      registers: [registry],
    }),
    withdrawals: new Counter({
      name: 'kairos_withdrawals_total',
      help: 'Cancels, pauses and edits of pre-dispatched jobs that asked the holder for the lease back, by result (withdrawn, refused, moved, timed-out)',
      labelNames: ['result'],
      registers: [registry],
    }),
    abortRevokes: new Counter({
      name: 'kairos_abort_revokes_total',
      help: 'Revokes (reason cancelled) this coordinator sent to the agents holding aborted runs',
      registers: [registry],
    }),
    runsFinished: new Counter({
      name: 'kairos_runs_finished_total',
      help: 'Runs that ended, by outcome (SUCCEEDED, FAILED, TIMED_OUT, CANCELLED, LEASE_EXPIRED), recorded by this coordinator',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    jobsDead: new Counter({
      name: 'kairos_jobs_dead_total',
      help: 'Jobs that went DEAD (attempts exhausted; a human should look), recorded by this coordinator',
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: 'kairos_webhook_deliveries_total',
      help: 'Webhook delivery attempts by this coordinator, by result: delivered, retry (will be tried again), failed (gave up)',
      labelNames: ['result'],
      registers: [registry],
    }),
    agentsRebalanced: new Counter({
      name: 'kairos_agents_rebalanced_total',
      help: 'Agents this coordinator asked to move to another coordinator because it served more than its share',
      registers: [registry],
    }),
    occurrencesSkipped: new Counter({
      name: 'kairos_occurrences_skipped_total',
      help: 'Occurrences recorded SKIPPED (missed, by the misfire or overlap policy), recorded by this coordinator',
      registers: [registry],
    }),
    retentionDeleted: new Counter({
      name: 'kairos_retention_deleted_total',
      help: 'Jobs and runs deleted by retention on this coordinator (table: jobs or runs)',
      labelNames: ['table'],
      registers: [registry],
    }),
  };
  new Gauge({
    name: 'kairos_agents_quarantined',
    help: 'Connected agents in quarantine now (no new work)',
    registers: [registry],
    collect() {
      this.set(metrics.countQuarantined());
    },
  });
  return metrics;
}
