/**
 * A background pass repeated every `intervalMs`, jittered ±20 % so the
 * coordinators sharing a database do not run in lockstep. Passes never
 * overlap: the next is timed from the end of the previous. A failing pass is
 * logged and the loop goes on. Used by the reaper and the retention loop.
 */
import type { Logger } from 'pino';

export interface Periodic {
  start(): void;
  /** Stops scheduling and waits for a pass in progress. */
  stop(): Promise<void>;
  /** True once stop() was called: long passes check it between batches. */
  readonly stopped: boolean;
}

export function periodic(intervalMs: number, pass: () => Promise<unknown>, logger: Logger, what: string): Periodic {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = true;

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = pass()
        .then(() => undefined)
        .catch((error: unknown) => logger.warn({ err: error }, `${what} pass failed; will retry`))
        .finally(() => {
          running = undefined;
          schedule();
        });
    }, intervalMs * (0.8 + Math.random() * 0.4));
  }

  return {
    start() {
      stopped = false;
      schedule();
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
    get stopped() {
      return stopped;
    },
  };
}
