/**
 * Prometheus metrics, one registry per coordinator instance (tests run several
 * in one process). `kairos_jobs_due_next_minute` is the autoscaling signal
 * (KEDA's prometheus scaler can read it): it counts work before it is late,
 * where CPU only rises once the backlog exists.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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
  retentionDeleted: Counter<'table'>;
}

export function createMetrics(countDueNextMinute: () => Promise<number>): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'kairos_process_' });
  let cached: { at: number; value: number } | undefined;
  new Gauge({
    name: 'kairos_jobs_due_next_minute',
    help: 'DUE jobs whose next_run_at is within the next 60 s (by the database clock); scale agents on this',
    registers: [registry],
    async collect() {
      // Several scrapers (or a scraper and a dashboard) within a second share one count.
      if (!cached || Date.now() - cached.at > 1_000) cached = { at: Date.now(), value: await countDueNextMinute() };
      this.set(cached.value);
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
    abortRevokes: new Counter({
      name: 'kairos_abort_revokes_total',
      help: 'Revokes (reason cancelled) this coordinator sent to the agents holding aborted runs',
      registers: [registry],
    }),
    retentionDeleted: new Counter({
      name: 'kairos_retention_deleted_total',
      help: 'Rows deleted by retention on this coordinator (table: runs or jobs)',
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
