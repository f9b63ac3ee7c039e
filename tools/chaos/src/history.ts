/**
 * The history of a chaos session: everything the checker reads, as plain data
 * (times are epoch milliseconds from one host clock: PostgreSQL's now(), the
 * receiver's and the client's Date.now() all read it).
 *
 * It is assembled at the end of a session from the `jobs` and `runs` tables,
 * the receiver's side-effect log, the client's log of answered requests and
 * the fault log, and saved next to the results so any verdict can be re-checked
 * offline (`node dist/main.js --check <history.json>`).
 */
import type { CallRecord } from './receiver';

export type RunOutcome = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'LEASE_EXPIRED' | 'CANCELLED' | 'SKIPPED';

export interface HJob {
  id: string;
  /** Cron expression (recurring) or null (one-off). */
  schedule: string | null;
  timezone: string;
  /** One-off: when it was to run. */
  runAt: number | null;
  misfirePolicy: 'fire-once' | 'skip';
  createdAt: number;
  /** Final state, and the occurrence it was serving or would serve next. */
  state: string;
  occurrenceAt: number | null;
  nextRunAt: number | null;
  maxAttempts: number;
}

export interface HRun {
  id: number;
  jobId: string;
  attempt: number;
  /** Fencing token; null only for SKIPPED rows. */
  generation: number | null;
  scheduledFor: number;
  workerId: string | null;
  startedAt: number | null;
  finishedAt: number | null;
  outcome: RunOutcome;
  error: string | null;
}

export type FaultKind =
  | 'agent-kill'
  | 'agent-pause'
  | 'net-drop'
  | 'net-delay'
  | 'net-reset'
  | 'net-oneway'
  | 'coordinator-kill'
  | 'coordinator-second'
  | 'postgres-crash'
  | 'postgres-pause'
  | 'cancel-storm'
  | 'predispatch-kill'
  | 'predispatch-cancel';

export type FaultClass = 'agent' | 'coordinator' | 'postgres' | 'client';

export function faultClass(kind: FaultKind): FaultClass {
  if (kind === 'cancel-storm' || kind === 'predispatch-cancel') return 'client';
  if (kind.startsWith('coordinator')) return 'coordinator';
  if (kind.startsWith('postgres')) return 'postgres';
  return 'agent';
}

export interface HFault {
  kind: FaultKind;
  /** Agent id, coordinator name, "postgres" or "client". */
  target: string;
  detail: string;
  /** When the fault was injected. */
  injectedAt: number;
  /**
   * When the faulted component was back: for agent faults the injection time
   * (other agents take over at once, so recovery is counted from the fault);
   * for a coordinator, when a coordinator was serving again (the restarted one
   * logged ready, or the injection time if another one was up); for
   * PostgreSQL, the end of the outage (restarted, or SIGCONT).
   */
  backAt: number;
  /** When everything the fault did was undone (process restarted, proxy back to pass). */
  healedAt: number;
}

export interface ClientLog {
  /** Every create answered 201 (and 200 replays of them). */
  created: Array<{ jobId: string; at: number }>;
  /** Every DELETE answered 204: sent and answered times. */
  cancelled: Array<{ jobId: string; sentAt: number; answeredAt: number }>;
  /** Pause (200) .. resume (200) windows; `to` null = never resumed. */
  pauses: Array<{ jobId: string; from: number; to: number | null }>;
  /** Requests by answer class, for the report. */
  requests: Record<string, number>;
}

/** A look at the store after healing and settling, while agents still run. */
export interface Probe {
  at: number;
  jobs: Array<{ id: string; state: string; nextRunAt: number | null; leaseUntil: number | null; generation: number }>;
  running: Array<{ jobId: string; generation: number; startedAt: number; workerId: string | null }>;
}

export interface SessionTimes {
  /** Setup done, fault clock started. */
  startedAt: number;
  /** Last fault healed; client mutations stopped. */
  healedAt: number;
  /** Agents told to stop: the end of the observed window. */
  observedUntil: number;
  /** Final read of the store. */
  snapshotAt: number;
}

export interface History {
  seed: number;
  minutes: number;
  /** `git describe --always --dirty` of the checkout when the session started (Kairos processes started later load whatever is built then). */
  commit?: string;
  leaseMs: number;
  retryBaseMs: number;
  /** Longest handler the workload uses (bounds a healthy run's length). */
  maxHandlerMs: number;
  times: SessionTimes;
  jobs: HJob[];
  runs: HRun[];
  calls: CallRecord[];
  client: ClientLog;
  faults: HFault[];
  /** 'stale outcome rejected' lines logged by the coordinators. */
  staleReportsRejected: number;
  probe: Probe | null;
  /** Kairos processes that exited without being told to (restarted by the harness). */
  crashes?: Array<{ process: string; at: number; code: string; lastLines: string[] }>;
}
