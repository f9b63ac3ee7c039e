/**
 * A task handler the test controls: each run waits until the test finishes
 * it, and records whether (and why) its signal was aborted. A run whose
 * payload has `ignoreSignal: true` keeps waiting after an abort, like a
 * handler that does not honour its signal.
 */
import type { TaskContext, TaskHandler } from '../sdk';

export interface ControlledRun {
  readonly payload: Record<string, unknown>;
  readonly ctx: TaskContext;
  abortReason: unknown;
  settled: boolean;
  finish(outcome?: Error): void;
}

export class ControlledTask {
  readonly runs = new Map<string, ControlledRun>();

  readonly handler: TaskHandler = (payload, ctx) =>
    new Promise<void>((resolve, reject) => {
      const run: ControlledRun = {
        payload,
        ctx,
        abortReason: undefined,
        settled: false,
        finish: (outcome) => {
          if (run.settled) return;
          run.settled = true;
          if (outcome === undefined) resolve();
          else reject(outcome);
        },
      };
      this.runs.set(ctx.jobId, run);
      ctx.signal.addEventListener(
        'abort',
        () => {
          run.abortReason = ctx.signal.reason;
          if (payload['ignoreSignal'] !== true) run.finish(new Error('aborted'));
        },
        { once: true },
      );
    });

  run(jobId: string): ControlledRun {
    const run = this.runs.get(jobId);
    if (run === undefined) throw new Error(`no run of job ${jobId}`);
    return run;
  }

  finish(jobId: string, outcome?: Error): void {
    this.run(jobId).finish(outcome);
  }
}
