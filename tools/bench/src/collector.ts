/**
 * Bench-process side of the measurement: receives the (phase, due, started,
 * ended) records every worker process sends, and lets workloads wait until a
 * phase has seen a number of finished jobs.
 */
import { RECORD_FIELDS, type ChildMessage } from './common';

export interface PhaseRecords {
  dueAt: number[];
  startedAt: number[];
  endedAt: number[];
  /** When the worker process saw the job (0 when not traced). */
  assignedAt: number[];
}

export class Collector {
  private readonly phases = new Map<number, PhaseRecords>();
  private readonly waiters: Array<{ phase: number; count: number; resolve: () => void }> = [];
  private nextPhase = 1;

  newPhase(): number {
    const phase = this.nextPhase++;
    this.phases.set(phase, { dueAt: [], startedAt: [], endedAt: [], assignedAt: [] });
    return phase;
  }

  readonly onMessage = (message: ChildMessage): void => {
    if (message.t !== 'rec') return;
    const r = message.r;
    const touched = new Set<number>();
    for (let i = 0; i + RECORD_FIELDS - 1 < r.length; i += RECORD_FIELDS) {
      const phase = this.phases.get(r[i]!);
      if (!phase) continue; // a job from a phase nobody measures any more
      phase.dueAt.push(r[i + 1]!);
      phase.startedAt.push(r[i + 2]!);
      phase.endedAt.push(r[i + 3]!);
      phase.assignedAt.push(r[i + 4]!);
      touched.add(r[i]!);
    }
    for (let w = this.waiters.length - 1; w >= 0; w--) {
      const waiter = this.waiters[w]!;
      if (touched.has(waiter.phase) && this.count(waiter.phase) >= waiter.count) {
        this.waiters.splice(w, 1);
        waiter.resolve();
      }
    }
  };

  count(phase: number): number {
    return this.phases.get(phase)?.startedAt.length ?? 0;
  }

  records(phase: number): PhaseRecords {
    return this.phases.get(phase) ?? { dueAt: [], startedAt: [], endedAt: [], assignedAt: [] };
  }

  /** Resolves true once `count` jobs of the phase finished, false on timeout. */
  waitFor(phase: number, count: number, timeoutMs: number): Promise<boolean> {
    if (this.count(phase) >= count) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = { phase, count, resolve: () => (clearTimeout(timer), resolve(true)) };
      const timer = setTimeout(() => {
        const i = this.waiters.indexOf(waiter);
        if (i >= 0) this.waiters.splice(i, 1);
        resolve(false);
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Frees a phase's arrays once its figures are computed. */
  forget(phase: number): void {
    this.phases.delete(phase);
  }
}
