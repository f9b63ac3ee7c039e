/**
 * The session's outputs: the results summary (latest.json's shape) and a
 * report for people.
 */
import type { FaultKind, History } from './history';
import { RECOVERY_BOUND_MS, type CheckResult } from './checker';

export interface Summary {
  seed: number;
  minutes: number;
  faults: Partial<Record<FaultKind, number>>;
  occurrences: number;
  missed: number;
  validOverlaps: number;
  staleAccepted: number;
  staleAttempted: number;
  lost: number;
  stuck: number;
  maxRecoveryMs: { agent: number; coordinator: number; postgres: number };
  verdict: 'pass' | 'fail';
  /** Beyond the required fields: what else the checker measured. */
  duplicates: number;
  /** Kairos processes that exited on their own (each also fails the verdict). */
  crashes: number;
  details: {
    commit: string;
    staleAttemptedReceiver: number;
    staleReportsRejected: number;
    jobsCreated: number;
    runs: number;
    executedRuns: number;
    skippedRuns: number;
    receiverCalls: number;
    committedWrites: number;
    unsucceededOccurrences: number;
    lateWrites: number;
    pastLeaseCalls: number;
    dispatchLagMs: { p50: number; p99: number; max: number };
    outcomes: Record<string, number>;
    clientRequests: Record<string, number>;
    faultLog: Array<{ kind: FaultKind; target: string; detail: string; at: string; recoveryMs: number | null; waited: number }>;
    violations: Array<{ kind: string; jobId?: string; detail: string }>;
    durationsMs: { faultPhase: number; total: number };
  };
}

export function summarize(history: History, result: CheckResult, totalMs: number): Summary {
  const faults: Partial<Record<FaultKind, number>> = {};
  for (const fault of history.faults) faults[fault.kind] = (faults[fault.kind] ?? 0) + 1;
  return {
    seed: history.seed,
    minutes: history.minutes,
    faults,
    occurrences: result.occurrences,
    missed: result.missed,
    validOverlaps: result.validOverlaps,
    staleAccepted: result.staleAccepted,
    staleAttempted: result.staleAttempted,
    lost: result.lost,
    stuck: result.stuck,
    maxRecoveryMs: result.maxRecoveryMs,
    verdict: result.verdict,
    duplicates: result.duplicates,
    crashes: result.crashes,
    details: {
      commit: history.commit ?? 'unknown',
      staleAttemptedReceiver: result.staleAttemptedReceiver,
      staleReportsRejected: result.staleReportsRejected,
      jobsCreated: new Set(history.client.created.map((c) => c.jobId)).size,
      runs: result.info.runs,
      executedRuns: result.info.executedRuns,
      skippedRuns: result.info.skippedRuns,
      receiverCalls: result.info.receiverCalls,
      committedWrites: result.info.committedCalls,
      unsucceededOccurrences: result.info.unsucceeded,
      lateWrites: result.info.lateWrites,
      pastLeaseCalls: result.info.pastLeaseCalls,
      dispatchLagMs: result.info.lagMs,
      outcomes: result.info.outcomes,
      clientRequests: history.client.requests,
      faultLog: history.faults.map((fault) => {
        const recovery = result.recoveries.find((r) => r.injectedAt === fault.injectedAt && r.kind === fault.kind);
        return {
          kind: fault.kind,
          target: fault.target,
          detail: fault.detail,
          at: `+${((fault.injectedAt - history.times.startedAt) / 1000).toFixed(1)}s`,
          recoveryMs: recovery ? recovery.recoveryMs : null,
          waited: recovery ? recovery.items : 0,
        };
      }),
      violations: result.violations.slice(0, 200),
      durationsMs: { faultPhase: history.times.healedAt - history.times.startedAt, total: totalMs },
    },
  };
}

export function renderReport(summary: Summary): string {
  const lines: string[] = [];
  const ok = (good: boolean) => (good ? 'ok  ' : 'FAIL');
  const d = summary.details;
  lines.push(`Kairos chaos session: seed ${summary.seed}, ${summary.minutes} min of faults  ->  ${summary.verdict.toUpperCase()}  (checkout ${d.commit})`);
  lines.push('');
  lines.push(
    `Workload: ${d.jobsCreated} jobs created, ${d.executedRuns} executions and ${d.skippedRuns} SKIPPED occurrences recorded, ` +
      `${d.receiverCalls} side-effect calls (${d.committedWrites} committed); dispatch lag p50 ${d.dispatchLagMs.p50} ms, ` +
      `p99 ${d.dispatchLagMs.p99} ms, max ${d.dispatchLagMs.max} ms.`,
  );
  lines.push(`Client requests: ${Object.entries(d.clientRequests).map(([k, v]) => `${k}: ${v}`).join(', ')}`);
  lines.push('');
  lines.push('Faults');
  lines.push(`  ${'at'.padEnd(8)} ${'kind'.padEnd(19)} ${'target'.padEnd(9)} ${'recovery'.padStart(9)}  detail`);
  for (const fault of d.faultLog) {
    const recovery = fault.recoveryMs === null ? '-' : `${fault.recoveryMs} ms`;
    lines.push(`  ${fault.at.padEnd(8)} ${fault.kind.padEnd(19)} ${fault.target.padEnd(9)} ${recovery.padStart(9)}  ${fault.detail}`);
  }
  lines.push('');
  const paused = (summary.faults['agent-pause'] ?? 0) > 0;
  const bound = RECOVERY_BOUND_MS;
  lines.push('Invariants');
  lines.push(`  ${ok(summary.missed === 0)} (a) due occurrences ${summary.occurrences}, missed ${summary.missed}`);
  lines.push(`  ${ok(summary.validOverlaps === 0)} (b) overlapping executions under valid leases: ${summary.validOverlaps}`);
  lines.push(
    `  ${ok(summary.staleAccepted === 0 && (!paused || summary.staleAttempted > 0))} (c) stale writes accepted ${summary.staleAccepted}, attempted ${summary.staleAttempted} ` +
      `(receiver refusals ${d.staleAttemptedReceiver}, coordinator rejections ${d.staleReportsRejected})`,
  );
  lines.push(`  ${ok(summary.lost === 0)} (d) lost jobs / cancels not honoured: ${summary.lost}`);
  lines.push(`  ${ok(summary.stuck === 0)} (e) runs stuck after healing: ${summary.stuck}`);
  const r = summary.maxRecoveryMs;
  lines.push(
    `  ${ok(r.agent <= bound && r.coordinator <= bound && r.postgres <= bound)} (e) max recovery after the component was back: ` +
      `agent ${r.agent} ms, coordinator ${r.coordinator} ms, postgres ${r.postgres} ms (bound ${bound} ms)`,
  );
  lines.push(`  ${ok(summary.duplicates === 0)}     duplicate executions of one occurrence or lease: ${summary.duplicates}`);
  lines.push(`  ${ok(summary.crashes === 0)}     Kairos processes that exited on their own: ${summary.crashes}`);
  lines.push('');
  lines.push(
    `Also seen: ${d.unsucceededOccurrences} occurrences ran but never succeeded, ${d.lateWrites} writes accepted after their lease ended ` +
      `(no newer holder yet), ${d.pastLeaseCalls} handler calls still open after their lease was reaped.`,
  );
  lines.push(`Run outcomes: ${Object.entries(d.outcomes).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  if (d.violations.length > 0) {
    lines.push('');
    lines.push(`Violations (${d.violations.length}${d.violations.length === 200 ? '+' : ''}):`);
    for (const v of d.violations.slice(0, 40)) lines.push(`  [${v.kind}] ${v.jobId ?? ''} ${v.detail}`);
  }
  return `${lines.join('\n')}\n`;
}
