/**
 * The history checker: pure functions from a History to counts, violations and
 * a verdict. Nothing here reads a clock, a database or a file, so corrupted
 * histories can be checked in unit tests exactly like real ones.
 *
 * The definitions are stated in docs/reliability.md ("Definitions"); the comments
 * on each check below say the same in short.
 */
import { nextOccurrence, parseCron, retryBackoffMs, type CronSchedule } from '@kairos/schedule';
import type { CallRecord } from './receiver';
import { faultClass, type FaultKind, type HFault, type History, type HJob, type HRun } from './history';

/** How late a due occurrence may still be undecided when observation ends (dispatch lag allowance). */
export const LAG_ALLOWANCE_MS = 5_000;
/** A run is stuck when it is RUNNING this long past the longest handler plus a lease. */
export const STUCK_SLACK_MS = 5_000;
/** Recovery bound after the faulted component is back. */
export const RECOVERY_BOUND_MS = 5_000;
/**
 * Slack when comparing two database timestamps of different transactions.
 * runs.started_at and finished_at are now(), the start time of the writing
 * transaction, which PostgreSQL fixes when the statement arrives, a moment
 * before the snapshot that decides what the statement sees. A claim can thus
 * record a start a millisecond or so before the recorded end of the run whose
 * commit made the job claimable. Real overlaps last as long as a lease.
 */
export const DB_CLOCK_SLACK_MS = 20;

export type ViolationKind =
  | 'missed'
  | 'overlap'
  | 'stale-accepted'
  | 'duplicate'
  | 'lost'
  | 'stuck'
  | 'slow-recovery'
  | 'fence-unexercised'
  | 'crash';

export interface Violation {
  kind: ViolationKind;
  jobId?: string;
  detail: string;
}

export interface FaultRecovery {
  kind: FaultKind;
  target: string;
  injectedAt: number;
  backAt: number;
  /** Work items that waited on this fault. */
  items: number;
  /** Latest start of such an item, minus backAt (0 when nothing waited). */
  recoveryMs: number;
  /** The job behind the slowest item. */
  slowestJobId: string | null;
}

export interface CheckResult {
  occurrences: number;
  missed: number;
  validOverlaps: number;
  staleAccepted: number;
  staleAttempted: number;
  staleAttemptedReceiver: number;
  staleReportsRejected: number;
  duplicates: number;
  lost: number;
  stuck: number;
  crashes: number;
  maxRecoveryMs: { agent: number; coordinator: number; postgres: number };
  recoveries: FaultRecovery[];
  /** Information, not judged. */
  info: {
    runs: number;
    executedRuns: number;
    skippedRuns: number;
    receiverCalls: number;
    committedCalls: number;
    /** Occurrences whose attempts all failed (ran, never succeeded). */
    unsucceeded: number;
    /** Writes accepted after their own lease had ended (no newer holder existed yet to fence them). */
    lateWrites: number;
    /** Handler calls still in progress at the receiver after their lease had been reaped. */
    pastLeaseCalls: number;
    /** Dispatch lag of every run: from ready (due, retry time, previous run's end) to started. */
    lagMs: { p50: number; p99: number; max: number };
    outcomes: Record<string, number>;
  };
  violations: Violation[];
  verdict: 'pass' | 'fail';
}

// ---------------------------------------------------------------------------

export function checkHistory(history: History): CheckResult {
  const violations: Violation[] = [];
  const index = indexHistory(history);

  const occurrences = checkOccurrences(history, index, violations);
  const validOverlaps = checkOverlaps(history, index, violations);
  const stale = checkStale(history, index, violations);
  const duplicates = checkDuplicates(history, index, violations);
  const lost = checkLost(history, index, violations);
  const stuck = checkStuck(history, violations);
  const recoveries = measureRecoveries(history, index);

  const maxRecoveryMs = { agent: 0, coordinator: 0, postgres: 0 };
  for (const recovery of recoveries) {
    const cls = faultClass(recovery.kind);
    if (cls === 'client') continue;
    maxRecoveryMs[cls] = Math.max(maxRecoveryMs[cls], recovery.recoveryMs);
    if (recovery.recoveryMs > RECOVERY_BOUND_MS) {
      violations.push({
        kind: 'slow-recovery',
        ...(recovery.slowestJobId ? { jobId: recovery.slowestJobId } : {}),
        detail: `${recovery.kind} on ${recovery.target} at ${iso(recovery.injectedAt)}: work resumed ${recovery.recoveryMs} ms after the component was back (bound ${RECOVERY_BOUND_MS} ms)`,
      });
    }
  }

  for (const crash of history.crashes ?? []) {
    violations.push({ kind: 'crash', detail: `${crash.process} exited on its own (${crash.code}) at ${iso(crash.at)}` });
  }

  const pausedAgent = history.faults.some((fault) => fault.kind === 'agent-pause');
  if (pausedAgent && stale.attempted === 0) {
    violations.push({ kind: 'fence-unexercised', detail: 'an agent was paused past its lease, yet no stale write was attempted anywhere' });
  }

  const counted = (kind: ViolationKind) => violations.filter((v) => v.kind === kind).length;
  const info = describeHistory(history, index, occurrences.unsucceeded);
  const verdict = violations.length === 0 ? 'pass' : 'fail';
  return {
    occurrences: occurrences.required,
    missed: counted('missed'),
    validOverlaps,
    staleAccepted: counted('stale-accepted'),
    staleAttempted: stale.attempted,
    staleAttemptedReceiver: stale.receiver,
    staleReportsRejected: history.staleReportsRejected,
    duplicates,
    lost,
    stuck,
    crashes: counted('crash'),
    maxRecoveryMs,
    recoveries,
    info,
    violations,
    verdict,
  };
}

// ---------------------------------------------------------------------------
// Indexes

interface HistoryIndex {
  jobs: Map<string, HJob>;
  /** Runs per job, in generation order (SKIPPED rows last, in id order). */
  runsByJob: Map<string, HRun[]>;
  /** Executed runs (with a generation) per job, in generation order. */
  executedByJob: Map<string, HRun[]>;
  runByLease: Map<string, HRun>;
  callsByJob: Map<string, CallRecord[]>;
  cancels: Map<string, { sentAt: number; answeredAt: number }>;
  pausesByJob: Map<string, Array<{ from: number; to: number }>>;
}

function leaseKey(jobId: string, generation: number): string {
  return `${jobId}#${generation}`;
}

function indexHistory(history: History): HistoryIndex {
  const jobs = new Map(history.jobs.map((job) => [job.id, job]));
  const runsByJob = new Map<string, HRun[]>();
  for (const run of history.runs) push(runsByJob, run.jobId, run);
  const executedByJob = new Map<string, HRun[]>();
  const runByLease = new Map<string, HRun>();
  for (const [jobId, runs] of runsByJob) {
    runs.sort((a, b) => (a.generation ?? Infinity) - (b.generation ?? Infinity) || a.id - b.id);
    const executed = runs.filter((run) => run.generation !== null);
    executedByJob.set(jobId, executed);
    for (const run of executed) {
      const key = leaseKey(jobId, run.generation!);
      if (!runByLease.has(key)) runByLease.set(key, run);
    }
  }
  const callsByJob = new Map<string, CallRecord[]>();
  for (const call of history.calls) push(callsByJob, call.jobId, call);
  for (const calls of callsByJob.values()) calls.sort((a, b) => a.beganAt - b.beganAt);
  const cancels = new Map<string, { sentAt: number; answeredAt: number }>();
  for (const cancel of history.client.cancelled) {
    const known = cancels.get(cancel.jobId);
    if (!known || cancel.answeredAt < known.answeredAt) cancels.set(cancel.jobId, { sentAt: cancel.sentAt, answeredAt: cancel.answeredAt });
  }
  const pausesByJob = new Map<string, Array<{ from: number; to: number }>>();
  for (const pause of history.client.pauses) {
    push(pausesByJob, pause.jobId, { from: pause.from, to: pause.to ?? history.times.observedUntil });
  }
  return { jobs, runsByJob, executedByJob, runByLease, callsByJob, cancels, pausesByJob };
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

// ---------------------------------------------------------------------------
// (a) every due occurrence ran at least once

/**
 * Required occurrences of a recurring job: every schedule occurrence o with
 *   created_at < o <= end of observation, and
 *   o < the job's final occurrence_at (its frontier: the occurrence it would
 *   serve next; a 204 cancel leaves it where it was, so the frontier also
 *   marks where a cancel took over), and
 *   o outside every pause window [pause sent, resume answered].
 * Each needs a run row serving it (executed or SKIPPED): the job has moved
 * past it, so it must have been decided. Whether the frontier itself kept up
 * with time is judged by the stuck probe and by recovery, not here.
 * A one-off job is required when run_at <= end of observation - LAG_ALLOWANCE
 * and no cancel was answered 204, and needs an executed run.
 * A SUCCEEDED run also needs its side effect: a committed receiver call
 * carrying its fencing token; success without the write is a missed run too.
 */
function checkOccurrences(
  history: History,
  index: HistoryIndex,
  violations: Violation[],
): { required: number; unsucceeded: number } {
  let required = 0;
  let unsucceeded = 0;
  for (const job of history.jobs) {
    const runs = index.runsByJob.get(job.id) ?? [];
    const cancel = index.cancels.get(job.id);
    const pauses = index.pausesByJob.get(job.id) ?? [];
    if (job.schedule === null) {
      if (cancel || job.runAt === null || job.runAt > history.times.observedUntil - LAG_ALLOWANCE_MS) continue;
      required++;
      const executed = runs.filter((run) => run.generation !== null);
      if (executed.length === 0) {
        violations.push({ kind: 'missed', jobId: job.id, detail: `one-off due ${iso(job.runAt)} never ran (final state ${job.state})` });
      } else if (!executed.some((run) => run.outcome === 'SUCCEEDED')) {
        unsucceeded++;
      }
      continue;
    }
    const schedule = safeSchedule(job);
    if (schedule === null) {
      violations.push({ kind: 'missed', jobId: job.id, detail: `schedule "${job.schedule}" cannot be enumerated` });
      continue;
    }
    const frontier = job.occurrenceAt ?? history.times.observedUntil - LAG_ALLOWANCE_MS;
    const end = history.times.observedUntil;
    const served = new Map<number, HRun[]>();
    for (const run of runs) push(served, run.scheduledFor, run);
    let cursor = nextOccurrence(schedule, new Date(job.createdAt));
    while (cursor !== null && cursor.getTime() <= end && cursor.getTime() < frontier) {
      const at = cursor.getTime();
      cursor = nextOccurrence(schedule, cursor);
      if (pauses.some((pause) => at >= pause.from && at <= pause.to)) continue;
      required++;
      const rows = served.get(at);
      if (!rows || rows.length === 0) {
        violations.push({ kind: 'missed', jobId: job.id, detail: `occurrence ${iso(at)} has no run (neither executed nor SKIPPED)` });
      } else if (!rows.some((run) => run.outcome === 'SUCCEEDED' || run.outcome === 'SKIPPED')) {
        unsucceeded++;
      }
    }
  }
  // Success must be backed by the side effect it claims.
  for (const run of history.runs) {
    if (run.outcome !== 'SUCCEEDED' || run.generation === null) continue;
    const calls = index.callsByJob.get(run.jobId) ?? [];
    if (!calls.some((call) => call.token === run.generation && call.result === 'committed')) {
      violations.push({
        kind: 'missed',
        jobId: run.jobId,
        detail: `run ${run.id} (token ${run.generation}) is SUCCEEDED but the receiver committed no write with that token`,
      });
    }
  }
  return { required, unsucceeded };
}

function safeSchedule(job: HJob): CronSchedule | null {
  try {
    return parseCron(job.schedule, job.timezone);
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------
// (b) no overlapping executions by valid lease holders

/** The valid-lease window of an executed run: [started_at, finished_at], open runs until the snapshot. */
function window(run: HRun, history: History): [number, number] {
  return [run.startedAt ?? -Infinity, run.finishedAt ?? history.times.snapshotAt];
}

/**
 * Overlap: two executed runs of one job whose valid windows intersect (the
 * database let two leases be current at once), or two committed receiver
 * writes of one job with different tokens whose [begin, commit] intervals
 * intersect while both tokens' leases were valid.
 */
function checkOverlaps(history: History, index: HistoryIndex, violations: Violation[]): number {
  let count = 0;
  for (const [jobId, runs] of index.executedByJob) {
    const byStart = [...runs].sort((a, b) => (a.startedAt ?? 0) - (b.startedAt ?? 0));
    for (let i = 0; i < byStart.length; i++) {
      const [aStart, aEnd] = window(byStart[i]!, history);
      for (let j = i + 1; j < byStart.length; j++) {
        const [bStart, bEnd] = window(byStart[j]!, history);
        if (bStart >= aEnd - DB_CLOCK_SLACK_MS) break;
        if (aStart < bEnd - DB_CLOCK_SLACK_MS) {
          count++;
          violations.push({
            kind: 'overlap',
            jobId,
            detail: `runs ${byStart[i]!.id} (token ${byStart[i]!.generation}, ${byStart[i]!.workerId}) and ${byStart[j]!.id} (token ${byStart[j]!.generation}, ${byStart[j]!.workerId}) held valid leases at the same time: [${iso(aStart)}, ${iso(aEnd)}] and [${iso(bStart)}, ${iso(bEnd)}]`,
          });
        }
      }
    }
  }
  for (const [jobId, calls] of index.callsByJob) {
    const committed = calls.filter((call) => call.result === 'committed');
    for (let i = 0; i < committed.length; i++) {
      for (let j = i + 1; j < committed.length; j++) {
        const a = committed[i]!;
        const b = committed[j]!;
        if (a.token === b.token) continue;
        const from = Math.max(a.beganAt, b.beganAt);
        const to = Math.min(a.endedAt ?? Infinity, b.endedAt ?? Infinity);
        if (from >= to) continue;
        const runA = index.runByLease.get(leaseKey(jobId, a.token));
        const runB = index.runByLease.get(leaseKey(jobId, b.token));
        if (!runA || !runB) continue; // a write under a lease never granted: counted as stale-accepted
        const [aStart, aEnd] = window(runA, history);
        const [bStart, bEnd] = window(runB, history);
        const validFrom = Math.max(from, aStart, bStart);
        const validTo = Math.min(to, aEnd, bEnd);
        if (validFrom < validTo) {
          count++;
          violations.push({
            kind: 'overlap',
            jobId,
            detail: `receiver committed writes with tokens ${a.token} and ${b.token} that overlapped while both leases were valid (${iso(validFrom)} .. ${iso(validTo)})`,
          });
        }
        // Overlaps where one lease was no longer valid are stale writes, judged in checkStale.
      }
    }
  }
  return count;
}

// ---------------------------------------------------------------------------
// (c) stale writes: attempted (good, the fence at work) and accepted (bad)

/**
 * Stale write accepted:
 * - the receiver committed a write with token t after it had admitted a higher
 *   token for the job (the downstream fence should have refused it);
 * - the receiver committed a write whose token no run of the job ever had;
 * - the store recorded a reported outcome (anything but LEASE_EXPIRED) for a
 *   lease after a newer lease of the same job had started.
 * Stale write attempted: a receiver refusal (at begin or at commit) or a
 * coordinator 'stale outcome rejected' log line.
 */
function checkStale(history: History, index: HistoryIndex, violations: Violation[]): { attempted: number; receiver: number } {
  let receiver = 0;
  for (const [jobId, calls] of index.callsByJob) {
    for (const call of calls) {
      if (call.result === 'stale-begin' || call.result === 'stale-commit') receiver++;
      if (call.result !== 'committed') continue;
      const commitAt = call.endedAt ?? Infinity;
      const newer = calls.find((other) => other.token > call.token && other.result !== 'stale-begin' && other.beganAt < commitAt);
      if (newer) {
        violations.push({
          kind: 'stale-accepted',
          jobId,
          detail: `receiver committed token ${call.token} at ${iso(commitAt)} after admitting token ${newer.token} at ${iso(newer.beganAt)}`,
        });
        continue;
      }
      if (!index.runByLease.has(leaseKey(jobId, call.token))) {
        violations.push({ kind: 'stale-accepted', jobId, detail: `receiver committed token ${call.token}, which no run of the job ever held` });
      }
    }
  }
  for (const [jobId, runs] of index.executedByJob) {
    for (const run of runs) {
      if (run.outcome === 'LEASE_EXPIRED' || run.outcome === 'RUNNING' || run.finishedAt === null) continue;
      const newer = runs.find(
        (other) => other.generation! > run.generation! && other.startedAt !== null && other.startedAt < run.finishedAt! - DB_CLOCK_SLACK_MS,
      );
      if (newer) {
        violations.push({
          kind: 'stale-accepted',
          jobId,
          detail: `outcome ${run.outcome} of token ${run.generation} was recorded at ${iso(run.finishedAt)}, after token ${newer.generation} started at ${iso(newer.startedAt!)}`,
        });
      }
    }
  }
  return { attempted: receiver + history.staleReportsRejected, receiver };
}

// ---------------------------------------------------------------------------
// duplicates: one occurrence served twice, one lease recorded or written twice

function checkDuplicates(history: History, index: HistoryIndex, violations: Violation[]): number {
  const before = violations.length;
  const seenLease = new Set<string>();
  for (const run of history.runs) {
    if (run.generation === null) continue;
    const key = leaseKey(run.jobId, run.generation);
    if (seenLease.has(key)) violations.push({ kind: 'duplicate', jobId: run.jobId, detail: `two run rows for token ${run.generation}` });
    seenLease.add(key);
  }
  for (const [jobId, runs] of index.runsByJob) {
    const job = index.jobs.get(jobId);
    const byOccurrence = new Map<number, HRun[]>();
    for (const run of runs) push(byOccurrence, job?.schedule === null ? 0 : run.scheduledFor, run);
    for (const [occurrence, rows] of byOccurrence) {
      const succeeded = rows.filter((run) => run.outcome === 'SUCCEEDED');
      const skipped = rows.filter((run) => run.outcome === 'SKIPPED');
      const executed = rows.filter((run) => run.generation !== null);
      const what = job?.schedule === null ? 'the one-off job' : `occurrence ${iso(occurrence)}`;
      if (succeeded.length > 1) {
        violations.push({ kind: 'duplicate', jobId, detail: `${what} SUCCEEDED ${succeeded.length} times (runs ${succeeded.map((r) => r.id).join(', ')})` });
      }
      if (skipped.length > 1) violations.push({ kind: 'duplicate', jobId, detail: `${what} recorded SKIPPED ${skipped.length} times` });
      if (skipped.length > 0 && executed.length > 0) violations.push({ kind: 'duplicate', jobId, detail: `${what} was both SKIPPED and executed` });
      const firstSuccess = succeeded.reduce<number>((min, run) => Math.min(min, run.finishedAt ?? Infinity), Infinity);
      const after = executed.filter((run) => run.startedAt !== null && run.startedAt > firstSuccess);
      if (after.length > 0) {
        violations.push({ kind: 'duplicate', jobId, detail: `${what} ran again (run ${after[0]!.id}) after it had SUCCEEDED at ${iso(firstSuccess)}` });
      }
    }
  }
  for (const [jobId, calls] of index.callsByJob) {
    const committedTokens = new Set<number>();
    for (const call of calls) {
      if (call.result !== 'committed') continue;
      if (committedTokens.has(call.token)) {
        violations.push({ kind: 'duplicate', jobId, detail: `the receiver committed two writes with token ${call.token}` });
      }
      committedTokens.add(call.token);
    }
  }
  return violations.length - before;
}

// ---------------------------------------------------------------------------
// (d) lost jobs and broken cancels

function checkLost(history: History, index: HistoryIndex, violations: Violation[]): number {
  const before = violations.length;
  const created = new Set(history.client.created.map((entry) => entry.jobId));
  for (const jobId of created) {
    if (!index.jobs.has(jobId)) violations.push({ kind: 'lost', jobId, detail: 'created (201) but missing from the jobs table at the end' });
  }
  for (const [jobId, cancel] of index.cancels) {
    const job = index.jobs.get(jobId);
    if (job && job.state !== 'CANCELLED') {
      violations.push({ kind: 'lost', jobId, detail: `cancel answered 204 at ${iso(cancel.answeredAt)} but the job ended ${job.state}` });
    }
    for (const run of index.executedByJob.get(jobId) ?? []) {
      if (run.startedAt !== null && run.startedAt > cancel.answeredAt) {
        violations.push({
          kind: 'lost',
          jobId,
          detail: `run ${run.id} (token ${run.generation}) started ${iso(run.startedAt)}, after a cancel answered 204 at ${iso(cancel.answeredAt)}`,
        });
      }
    }
  }
  return violations.length - before;
}

// ---------------------------------------------------------------------------
// (e) nothing stuck after healing

/**
 * From the probe taken after healing and settling (agents still running):
 * a RUNNING run whose job no longer holds that lease; a CLAIMED job whose
 * lease ran out over 3 reaper passes ago; a DUE job overdue by more than the
 * lag allowance; a run RUNNING longer than the longest handler plus a lease
 * plus slack. From the final snapshot (agents stopped, leases lapsed): any
 * run still RUNNING.
 */
function checkStuck(history: History, violations: Violation[]): number {
  const before = violations.length;
  const probe = history.probe;
  if (probe) {
    const jobs = new Map(probe.jobs.map((job) => [job.id, job]));
    for (const run of probe.running) {
      const job = jobs.get(run.jobId);
      if (!job || job.state !== 'CLAIMED' || job.generation !== run.generation) {
        violations.push({ kind: 'stuck', jobId: run.jobId, detail: `run with token ${run.generation} is RUNNING but the job is ${job?.state ?? 'gone'} at token ${job?.generation}` });
      } else if (run.startedAt < probe.at - (history.maxHandlerMs + history.leaseMs + STUCK_SLACK_MS)) {
        violations.push({ kind: 'stuck', jobId: run.jobId, detail: `run with token ${run.generation} (${run.workerId}) RUNNING since ${iso(run.startedAt)}` });
      }
    }
    for (const job of probe.jobs) {
      if (job.state === 'CLAIMED' && job.leaseUntil !== null && job.leaseUntil < probe.at - 1_500) {
        violations.push({ kind: 'stuck', jobId: job.id, detail: `CLAIMED with a lease that ran out at ${iso(job.leaseUntil)} and was not reaped` });
      }
      if (job.state === 'DUE' && job.nextRunAt !== null && job.nextRunAt < probe.at - LAG_ALLOWANCE_MS) {
        violations.push({ kind: 'stuck', jobId: job.id, detail: `DUE since ${iso(job.nextRunAt)} and not dispatched (probe at ${iso(probe.at)})` });
      }
    }
  }
  for (const run of history.runs) {
    if (run.outcome === 'RUNNING') {
      violations.push({ kind: 'stuck', jobId: run.jobId, detail: `run ${run.id} (token ${run.generation}, ${run.workerId}) still RUNNING at the final snapshot` });
    }
  }
  return violations.length - before;
}

// ---------------------------------------------------------------------------
// recovery

/**
 * When a run became ready to start: a retry of the same occurrence is ready
 * when the previous attempt ended (plus its backoff, none after a lost lease
 * or a release); a new occurrence when it is due, not before the previous run
 * of the job ended (a job never overlaps itself) nor while the job was paused.
 */
export function readyAt(run: HRun, previous: HRun | undefined, history: History, pauses: Array<{ from: number; to: number }>): number {
  if (previous && previous.scheduledFor === run.scheduledFor && previous.finishedAt !== null) {
    const released = previous.outcome === 'CANCELLED' && (previous.error ?? '').startsWith('released before start');
    const backoff =
      previous.outcome === 'LEASE_EXPIRED' || released || previous.outcome === 'SUCCEEDED'
        ? 0
        : retryBackoffMs(Math.max(1, previous.attempt), { baseMs: history.retryBaseMs });
    return afterPauses(previous.finishedAt + backoff, pauses);
  }
  return afterPauses(Math.max(run.scheduledFor, previous?.finishedAt ?? -Infinity), pauses);
}

function afterPauses(at: number, pauses: Array<{ from: number; to: number }>): number {
  let ready = at;
  for (const pause of pauses) if (ready >= pause.from && ready <= pause.to) ready = pause.to;
  return ready;
}

interface WorkItem {
  jobId: string;
  /** A client pause fell between the previous run's end and this start: the wait is the client's doing. */
  paused: boolean;
  scheduledFor: number;
  readyAt: number;
  startedAt: number;
  previous: HRun | undefined;
}

function workItems(history: History, index: HistoryIndex): WorkItem[] {
  const items: WorkItem[] = [];
  for (const [jobId, runs] of index.executedByJob) {
    const pauses = index.pausesByJob.get(jobId) ?? [];
    runs.forEach((run, i) => {
      if (run.startedAt === null) return;
      const previous = i > 0 ? runs[i - 1] : undefined;
      const waitFrom = previous?.finishedAt ?? run.scheduledFor;
      const paused = pauses.some((pause) => pause.from < run.startedAt! && pause.to > waitFrom);
      items.push({ jobId, paused, scheduledFor: run.scheduledFor, readyAt: readyAt(run, previous, history, pauses), startedAt: run.startedAt, previous });
    });
  }
  return items;
}

/**
 * Recovery of one fault, from the moment the faulted component was back
 * (backAt): the latest start of any run that was waiting during the fault
 * ([ready, started] meets [injected, back]) or that retries a run the fault
 * cut short (a run active at injection, held by the faulted agent for agent
 * faults, that ended without success, when the retry was ready as soon as the
 * cut run was settled), minus backAt. A cut run whose job never ran again
 * counts with the time it was settled (reaped).
 *
 * Each fault is observed until the next one is injected (its horizon): a run
 * that ended after that is not blamed on it, and a start after the horizon
 * counts as the horizon. Faults are spaced so that the horizon is more than
 * RECOVERY_BOUND_MS after backAt, so a cut-off measure still fails the bound.
 */
function measureRecoveries(history: History, index: HistoryIndex): FaultRecovery[] {
  const items = workItems(history, index);
  const out: FaultRecovery[] = [];
  const ordered = [...history.faults].sort((a, b) => a.injectedAt - b.injectedAt);
  ordered.forEach((fault, position) => {
    if (faultClass(fault.kind) === 'client') return;
    const horizon = ordered[position + 1]?.injectedAt ?? Infinity;
    let latest = -Infinity;
    let slowest: string | null = null;
    let count = 0;
    const consider = (at: number, jobId: string) => {
      count++;
      const capped = Math.min(at, horizon);
      if (capped > latest) {
        latest = capped;
        slowest = jobId;
      }
    };
    for (const item of items) {
      if (item.readyAt >= horizon || item.paused) continue;
      if (item.readyAt <= fault.backAt && item.startedAt >= fault.injectedAt) {
        consider(item.startedAt, item.jobId);
      } else if (
        item.previous &&
        isCut(item.previous, fault, horizon) &&
        (item.scheduledFor === item.previous.scheduledFor || item.readyAt <= (item.previous.finishedAt ?? -Infinity))
      ) {
        // The retry (or the overdue next occurrence) of a run the fault cut short.
        consider(item.startedAt, item.jobId);
      }
    }
    for (const [jobId, runs] of index.executedByJob) {
      const last = runs[runs.length - 1];
      if (last && isCut(last, fault, horizon) && last.finishedAt !== null) consider(last.finishedAt, jobId);
    }
    out.push({
      kind: fault.kind,
      target: fault.target,
      injectedAt: fault.injectedAt,
      backAt: fault.backAt,
      items: count,
      recoveryMs: count === 0 ? 0 : Math.max(0, Math.round(latest - fault.backAt)),
      slowestJobId: slowest,
    });
  });
  return out;
}

/** A run the fault cut short: active at injection, ended without success before the next fault (or never). */
function isCut(run: HRun, fault: HFault, horizon: number): boolean {
  if (run.startedAt === null || run.startedAt > fault.injectedAt) return false;
  if (run.finishedAt !== null && (run.finishedAt < fault.injectedAt || run.finishedAt >= horizon)) return false;
  if (run.outcome === 'SUCCEEDED') return false;
  if (faultClass(fault.kind) === 'agent' && run.workerId !== fault.target) return false;
  return true;
}

// ---------------------------------------------------------------------------

function describeHistory(history: History, index: HistoryIndex, unsucceeded: number): CheckResult['info'] {
  const outcomes: Record<string, number> = {};
  for (const run of history.runs) outcomes[run.outcome] = (outcomes[run.outcome] ?? 0) + 1;
  let lateWrites = 0;
  let pastLeaseCalls = 0;
  for (const call of history.calls) {
    const run = index.runByLease.get(leaseKey(call.jobId, call.token));
    if (!run || run.finishedAt === null || call.endedAt === null) continue;
    if (call.result === 'committed' && call.endedAt > run.finishedAt) lateWrites++;
    if (run.outcome === 'LEASE_EXPIRED' && call.endedAt > run.finishedAt) pastLeaseCalls++;
  }
  const lags = workItems(history, index)
    .map((item) => Math.max(0, item.startedAt - item.readyAt))
    .sort((a, b) => a - b);
  const quantile = (q: number) => (lags.length === 0 ? 0 : Math.round(lags[Math.min(lags.length - 1, Math.floor(q * lags.length))]!));
  return {
    runs: history.runs.length,
    executedRuns: history.runs.filter((run) => run.generation !== null).length,
    skippedRuns: history.runs.filter((run) => run.outcome === 'SKIPPED').length,
    receiverCalls: history.calls.length,
    committedCalls: history.calls.filter((call) => call.result === 'committed').length,
    unsucceeded,
    lateWrites,
    pastLeaseCalls,
    lagMs: { p50: quantile(0.5), p99: quantile(0.99), max: lags.length === 0 ? 0 : Math.round(lags[lags.length - 1]!) },
    outcomes,
  };
}

function iso(ms: number): string {
  return Number.isFinite(ms) ? new Date(ms).toISOString() : String(ms);
}
