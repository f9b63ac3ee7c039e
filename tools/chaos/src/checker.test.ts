/**
 * The checker must pass a clean history and flag every deliberately corrupted
 * one. Histories are built by a tiny model of a correct scheduler (every
 * occurrence served, leases back to back, the receiver fencing), then
 * corrupted at every position where a corruption of each kind applies.
 */
import { nextOccurrence, parseCron } from '@kairos/schedule';
import { checkHistory, type CheckResult } from './checker';
import type { HFault, History, HJob, HRun } from './history';
import type { CallRecord } from './receiver';

const T0 = Date.parse('2030-01-01T00:00:00.000Z');
const S = 1000;

interface Builder {
  history: History;
  nextRunId: number;
}

function emptyHistory(): Builder {
  return {
    nextRunId: 1,
    history: {
      seed: 1,
      minutes: 1,
      leaseMs: 3000,
      retryBaseMs: 100,
      maxHandlerMs: 12_000,
      times: { startedAt: T0, healedAt: T0 + 60 * S, observedUntil: T0 + 80 * S, snapshotAt: T0 + 90 * S },
      jobs: [],
      runs: [],
      calls: [],
      client: { created: [], cancelled: [], pauses: [], requests: {} },
      faults: [],
      staleReportsRejected: 0,
      probe: { at: T0 + 75 * S, jobs: [], running: [] },
    },
  };
}

function addJob(b: Builder, job: Partial<HJob> & { id: string }): HJob {
  const full: HJob = {
    schedule: null,
    timezone: 'UTC',
    runAt: null,
    misfirePolicy: 'fire-once',
    createdAt: T0 - 500,
    state: 'DUE',
    occurrenceAt: null,
    nextRunAt: null,
    maxAttempts: 5,
    ...job,
  };
  b.history.jobs.push(full);
  b.history.client.created.push({ jobId: full.id, at: full.createdAt });
  return full;
}

/** One executed run with its committed side effect. */
function addRun(
  b: Builder,
  jobId: string,
  generation: number,
  scheduledFor: number,
  startedAt: number,
  durationMs: number,
  outcome: HRun['outcome'] = 'SUCCEEDED',
  worker = 'agent-1',
  call: CallRecord['result'] | null = 'committed',
): HRun {
  const run: HRun = {
    id: b.nextRunId++,
    jobId,
    attempt: 1,
    generation,
    scheduledFor,
    workerId: worker,
    startedAt,
    finishedAt: startedAt + durationMs,
    outcome,
    error: null,
  };
  b.history.runs.push(run);
  if (call !== null) {
    b.history.calls.push({
      jobId,
      attempt: 1,
      token: generation,
      beganAt: startedAt + 5,
      endedAt: startedAt + durationMs - 5,
      result: call,
    });
  }
  return run;
}

function addSkipped(b: Builder, jobId: string, scheduledFor: number, at: number): void {
  b.history.runs.push({
    id: b.nextRunId++,
    jobId,
    attempt: 0,
    generation: null,
    scheduledFor,
    workerId: null,
    startedAt: null,
    finishedAt: at,
    outcome: 'SKIPPED',
    error: 'occurrence missed (misfire policy fire-once)',
  });
}

/**
 * A clean history: a recurring job served on time, a recurring job with a
 * lease lost to a paused agent and fenced off, a job with a SKIPPED
 * occurrence, a paused job, a cancelled job and a one-off job.
 */
function cleanHistory(): History {
  const b = emptyHistory();
  const h = b.history;
  const until = h.times.observedUntil;

  // R1: every 5 s, each occurrence run 50 ms late for 300 ms.
  const r1 = addJob(b, { id: 'r1', schedule: '*/5 * * * * *' });
  let generation = 0;
  let o = nextOccurrence(parseCron(r1.schedule), new Date(r1.createdAt))!.getTime();
  while (o <= until) {
    addRun(b, 'r1', ++generation, o, o + 50, 300);
    o += 5 * S;
  }
  r1.occurrenceAt = o;
  r1.nextRunAt = o;

  // R2: every 10 s; at T0+20 s the holder (agent-2) is paused past its lease:
  // reaped at +23.5 s, retried by agent-3 at +23.6 s. The paused agent's write
  // is refused at commit, since token 4 arrived first.
  const r2 = addJob(b, { id: 'r2', schedule: '*/10 * * * * *' });
  generation = 0;
  for (let at = T0; at <= until; at += 10 * S) {
    if (at === T0 + 20 * S) {
      addRun(b, 'r2', ++generation, at, at + 20, 3480, 'LEASE_EXPIRED', 'agent-2', null);
      h.calls.push({ jobId: 'r2', attempt: 1, token: generation, beganAt: at + 30, endedAt: at + 6000, result: 'stale-commit' });
      addRun(b, 'r2', ++generation, at, at + 3600, 1000, 'SUCCEEDED', 'agent-3');
      h.runs[h.runs.length - 1]!.attempt = 2;
    } else {
      addRun(b, 'r2', ++generation, at, at + 40, 2000, 'SUCCEEDED', 'agent-2');
    }
  }
  r2.occurrenceAt = T0 + 90 * S;
  r2.nextRunAt = r2.occurrenceAt;
  h.faults.push({
    kind: 'agent-pause',
    target: 'agent-2',
    detail: 'SIGSTOP 5 s',
    injectedAt: T0 + 20 * S + 500,
    backAt: T0 + 20 * S + 500,
    healedAt: T0 + 25 * S + 500,
  });
  h.staleReportsRejected = 1;

  // R3: every 5 s with a 7 s handler: every other occurrence is SKIPPED.
  const r3 = addJob(b, { id: 'r3', schedule: '*/5 * * * * *' });
  generation = 0;
  let served = T0;
  while (served <= until) {
    const run = addRun(b, 'r3', ++generation, served, Math.max(served, h.runs.filter((r) => r.jobId === 'r3').at(-1)?.finishedAt ?? 0) + 10, 7000);
    const skippedAt = served + 5 * S;
    if (skippedAt > until) {
      served = skippedAt;
      break;
    }
    // At the end (7 s later) the occurrence at +5 s was missed and +10 s runs late (fire-once).
    addSkipped(b, 'r3', skippedAt, run.finishedAt!);
    served += 10 * S;
  }
  r3.occurrenceAt = served;

  // P: every 5 s, paused from +12 s to +31 s; the occurrence pending at the pause runs after resume.
  const p = addJob(b, { id: 'p', schedule: '*/5 * * * * *' });
  generation = 0;
  h.client.pauses.push({ jobId: 'p', from: T0 + 12 * S, to: T0 + 31 * S });
  for (let at = T0; at <= until; at += 5 * S) {
    if (at > T0 + 10 * S && at < T0 + 30 * S) continue;
    if (at === T0 + 30 * S) {
      // The resumed job serves +15 s late, then skips +20/+25 and runs +30 late.
      const late = addRun(b, 'p', ++generation, T0 + 15 * S, T0 + 31 * S + 20, 200);
      for (const skipped of [20, 25]) addSkipped(b, 'p', T0 + skipped * S, late.finishedAt!);
      addRun(b, 'p', ++generation, at, late.finishedAt! + 20, 200);
      continue;
    }
    addRun(b, 'p', ++generation, at, at + 30, 200);
  }
  p.occurrenceAt = T0 + 85 * S;

  // C: every 5 s, cancelled (204) at +22 s; its pending occurrence +25 s never runs.
  const c = addJob(b, { id: 'c', schedule: '*/5 * * * * *' });
  generation = 0;
  for (let at = T0; at <= T0 + 20 * S; at += 5 * S) addRun(b, 'c', ++generation, at, at + 25, 150);
  c.state = 'CANCELLED';
  c.occurrenceAt = T0 + 25 * S;
  h.client.cancelled.push({ jobId: 'c', sentAt: T0 + 22 * S, answeredAt: T0 + 22 * S + 15 });

  // O: a one-off at +33 s.
  const one = addJob(b, { id: 'o', runAt: T0 + 33 * S });
  addRun(b, 'o', 1, one.runAt!, one.runAt! + 30, 800);
  one.state = 'COMPLETED';
  one.occurrenceAt = one.runAt;

  // The probe saw everything healthy.
  h.probe = {
    at: T0 + 75 * S,
    jobs: h.jobs.map((job) => ({
      id: job.id,
      state: job.state === 'COMPLETED' || job.state === 'CANCELLED' ? job.state : 'DUE',
      nextRunAt: job.state === 'DUE' ? T0 + 76 * S : null,
      leaseUntil: null,
      generation: Math.max(0, ...h.runs.filter((r) => r.jobId === job.id && r.generation !== null).map((r) => r.generation!)),
    })),
    running: [],
  };
  return h;
}

function clone(history: History): History {
  return JSON.parse(JSON.stringify(history)) as History;
}

function describeFailures(result: CheckResult): string {
  return result.violations.map((v) => `${v.kind} ${v.jobId ?? ''}: ${v.detail}`).join('\n');
}

describe('checker on a clean history', () => {
  it('passes, with every count at zero and the fence exercised', () => {
    const result = checkHistory(cleanHistory());
    expect(describeFailures(result)).toBe('');
    expect(result.verdict).toBe('pass');
    expect(result.occurrences).toBeGreaterThan(40);
    expect(result).toMatchObject({ missed: 0, validOverlaps: 0, staleAccepted: 0, duplicates: 0, lost: 0, stuck: 0 });
    expect(result.staleAttempted).toBe(2);
    expect(result.maxRecoveryMs.agent).toBeGreaterThan(2500);
    expect(result.maxRecoveryMs.agent).toBeLessThan(5000);
  });
});

type Corruption = { name: string; history: History; expect: (r: CheckResult) => number };

/** Every run of a job served on time that is followed by another run of the same job. */
function succeededRuns(h: History): HRun[] {
  return h.runs.filter((run) => run.outcome === 'SUCCEEDED' && run.generation !== null);
}

function corruptions(): Corruption[] {
  const base = cleanHistory();
  const out: Corruption[] = [];
  const maxGen = (h: History, jobId: string) => Math.max(...h.runs.filter((r) => r.jobId === jobId).map((r) => r.generation ?? 0));

  // A duplicate: a SUCCEEDED run executed again (a new lease) after it had succeeded.
  succeededRuns(base).forEach((victim, i) => {
    const h = clone(base);
    const run = succeededRuns(h)[i]!;
    const generation = maxGen(h, run.jobId) + 100;
    const startedAt = run.finishedAt! + 1;
    h.runs.push({ ...run, id: 100_000 + i, generation, startedAt, finishedAt: startedAt + 10, workerId: 'agent-9' });
    h.calls.push({ jobId: run.jobId, attempt: 2, token: generation, beganAt: startedAt + 1, endedAt: startedAt + 9, result: 'committed' });
    out.push({ name: `duplicate of run ${victim.id} (${victim.jobId})`, history: h, expect: (r) => r.duplicates });
  });

  // An overlap: a run's start moved back inside its predecessor's valid window.
  for (const jobId of new Set(base.runs.map((r) => r.jobId))) {
    const executed = base.runs.filter((r) => r.jobId === jobId && r.generation !== null).sort((a, b) => a.generation! - b.generation!);
    executed.slice(1).forEach((victim, i) => {
      const h = clone(base);
      const previous = h.runs.find((r) => r.id === executed[i]!.id)!;
      const run = h.runs.find((r) => r.id === victim.id)!;
      run.startedAt = previous.finishedAt! - 500;
      out.push({ name: `overlap of run ${victim.id} with ${previous.id} (${jobId})`, history: h, expect: (r) => r.validOverlaps });
    });
  }

  // A missing occurrence: any row that serves a required occurrence deleted.
  const required = base.runs.filter((run) => {
    const job = base.jobs.find((j) => j.id === run.jobId)!;
    if (job.schedule === null) return run.generation !== null;
    const others = base.runs.filter((r) => r.jobId === run.jobId && r.scheduledFor === run.scheduledFor);
    return others.length === 1 && run.scheduledFor <= base.times.observedUntil && run.scheduledFor < job.occurrenceAt! && !base.client.pauses.some((p) => p.jobId === run.jobId && run.scheduledFor >= p.from && run.scheduledFor <= (p.to ?? Infinity));
  });
  required.forEach((victim) => {
    const h = clone(base);
    h.runs = h.runs.filter((r) => r.id !== victim.id);
    out.push({ name: `missing occurrence ${new Date(victim.scheduledFor).toISOString()} of ${victim.jobId}`, history: h, expect: (r) => r.missed });
  });

  // An accepted stale write: the refused write committed instead, and writes
  // of an older token committed after a newer token's write began.
  {
    const h = clone(base);
    h.calls.find((c) => c.result === 'stale-commit')!.result = 'committed';
    out.push({ name: 'stale write committed', history: h, expect: (r) => r.staleAccepted });
  }
  for (const jobId of new Set(base.runs.map((r) => r.jobId))) {
    const calls = base.calls.filter((c) => c.jobId === jobId && c.result === 'committed').sort((a, b) => a.token - b.token);
    calls.slice(1).forEach((newer, i) => {
      const h = clone(base);
      const older = calls[i]!;
      // The older holder writes again, late, after the newer token was admitted.
      h.calls.push({ ...older, beganAt: newer.beganAt + 1, endedAt: newer.beganAt + 2 });
      out.push({ name: `late write of token ${older.token} after ${newer.token} (${jobId})`, history: h, expect: (r) => r.staleAccepted });
    });
  }
  return out;
}

describe('checker on corrupted histories', () => {
  const all = corruptions();

  it('has corruptions of every kind to check', () => {
    const kinds = new Set(all.map((c) => c.name.split(' ')[0]));
    expect([...kinds].sort()).toEqual(['duplicate', 'late', 'missing', 'overlap', 'stale']);
    expect(all.length).toBeGreaterThan(100);
  });

  it('flags 100% of them, each under the invariant that was broken', () => {
    const unflagged = all.filter((c) => {
      const result = checkHistory(c.history);
      return result.verdict !== 'fail' || c.expect(result) === 0;
    });
    expect(unflagged.map((c) => c.name)).toEqual([]);
  });
});

describe('checker, single invariants', () => {
  it('flags a run started after a cancel answered 204, and a created job that vanished', () => {
    const h = cleanHistory();
    const cancel = h.client.cancelled[0]!;
    h.runs.push({
      id: 9999,
      jobId: cancel.jobId,
      attempt: 1,
      generation: 99,
      scheduledFor: T0 + 25 * S,
      workerId: 'agent-1',
      startedAt: cancel.answeredAt + 10,
      finishedAt: cancel.answeredAt + 100,
      outcome: 'SUCCEEDED',
      error: null,
    });
    h.calls.push({ jobId: cancel.jobId, attempt: 1, token: 99, beganAt: cancel.answeredAt + 20, endedAt: cancel.answeredAt + 90, result: 'committed' });
    h.client.created.push({ jobId: 'ghost', at: T0 });
    const result = checkHistory(h);
    expect(result.lost).toBe(2);
    expect(result.verdict).toBe('fail');
  });

  it('flags stuck runs and leases after healing', () => {
    const h = cleanHistory();
    h.probe!.jobs.push({ id: 'r1', state: 'CLAIMED', nextRunAt: null, leaseUntil: h.probe!.at - 10_000, generation: 500 });
    h.probe!.running.push({ jobId: 'r2', generation: 3, startedAt: h.probe!.at - 40_000, workerId: 'agent-2' });
    h.runs.push({ ...h.runs[0]!, id: 77_777, generation: 900, outcome: 'RUNNING', finishedAt: null, startedAt: h.times.snapshotAt - 1 });
    expect(checkHistory(h).stuck).toBe(3);
  });

  it('flags success without the side effect it claims', () => {
    const h = cleanHistory();
    const call = h.calls.find((c) => c.jobId === 'o')!;
    call.result = 'aborted';
    expect(checkHistory(h).missed).toBe(1);
  });

  it('flags a pause scenario in which no stale write was even attempted', () => {
    const h = cleanHistory();
    h.staleReportsRejected = 0;
    for (const call of h.calls) if (call.result === 'stale-commit') call.result = 'aborted';
    const result = checkHistory(h);
    expect(result.staleAttempted).toBe(0);
    expect(result.violations.map((v) => v.kind)).toContain('fence-unexercised');
  });

  it('flags recovery slower than the bound', () => {
    const h = cleanHistory();
    const retry = h.runs.find((r) => r.jobId === 'r2' && r.attempt === 2)!;
    retry.startedAt! += 4000;
    retry.finishedAt! += 4000;
    const fault: HFault = h.faults[0]!;
    const result = checkHistory(h);
    expect(result.maxRecoveryMs.agent).toBeGreaterThan(5000);
    expect(result.violations.some((v) => v.kind === 'slow-recovery' && v.detail.includes(fault.target))).toBe(true);
  });

  it('tolerates the 1 ms by which a claim transaction start can precede the previous run end', () => {
    const h = cleanHistory();
    const runs = h.runs.filter((r) => r.jobId === 'r1').sort((a, b) => a.generation! - b.generation!);
    runs[1]!.startedAt = runs[0]!.finishedAt! - 1;
    expect(checkHistory(h).validOverlaps).toBe(0);
    runs[1]!.startedAt = runs[0]!.finishedAt! - 400;
    expect(checkHistory(h).validOverlaps).toBe(1);
  });

  it('does not blame a fault for a wait the client caused by pausing the job', () => {
    const h = cleanHistory();
    const retry = h.runs.find((r) => r.jobId === 'r2' && r.attempt === 2)!;
    // Paused right after the lost lease was reaped, resumed 6 s later: the retry waits for the resume.
    h.client.pauses.push({ jobId: 'r2', from: T0 + 23_000, to: T0 + 29_000 });
    retry.startedAt = T0 + 29_050;
    retry.finishedAt = T0 + 29_500;
    const result = checkHistory(h);
    expect(result.maxRecoveryMs.agent).toBeLessThan(5000);
    expect(result.violations.filter((v) => v.kind === 'slow-recovery')).toEqual([]);
  });
});
