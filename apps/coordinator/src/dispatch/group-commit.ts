/**
 * Group commit: callers submit small batches (one heartbeat's leases, one
 * agent's outcomes); while a flush is running, new submissions queue, and the
 * next flush takes all of them in one database statement. No timer is added:
 * an idle system flushes at once, a busy one amortises a commit over every
 * agent that reported during the previous flush. This is what keeps durable
 * commits per job well below one under load.
 *
 * One submitter's bad entry must not fail everybody's flush: when a flush of
 * several submissions fails with an error `isolate` accepts (anything but the
 * database being down), each submission is flushed again on its own, so only
 * the one that carries the bad entry fails.
 */
export interface GroupCommit<I, O> {
  /** Resolves with one result per item, in order; rejects if the flush failed. */
  submit(items: readonly I[]): Promise<O[]>;
  /** Resolves once nothing is queued or running. */
  idle(): Promise<void>;
}

interface Pending<I, O> {
  items: readonly I[];
  resolve: (results: O[]) => void;
  reject: (error: unknown) => void;
}

export function groupCommit<I, O>(
  flush: (items: I[]) => Promise<O[]>,
  options: { maxItems?: number; isolate?: (error: unknown) => boolean } = {},
): GroupCommit<I, O> {
  const maxItems = options.maxItems ?? 5_000;
  const isolate = options.isolate ?? (() => false);
  let queue: Pending<I, O>[] = [];
  let running: Promise<void> | undefined;

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const batch: Pending<I, O>[] = [];
      let count = 0;
      while (queue.length > 0 && (batch.length === 0 || count + queue[0]!.items.length <= maxItems)) {
        const next = queue.shift()!;
        batch.push(next);
        count += next.items.length;
      }
      const items = batch.flatMap((p) => p.items);
      try {
        const results = await flush(items);
        let offset = 0;
        for (const p of batch) {
          p.resolve(results.slice(offset, offset + p.items.length));
          offset += p.items.length;
        }
      } catch (error: unknown) {
        if (batch.length > 1 && isolate(error)) {
          for (const p of batch) await flush([...p.items]).then(p.resolve, p.reject);
        } else {
          for (const p of batch) p.reject(error);
        }
      }
    }
  }

  function kick(): void {
    if (running) return;
    running = drain().finally(() => {
      running = undefined;
      if (queue.length > 0) kick();
    });
  }

  return {
    submit(items) {
      if (items.length === 0) return Promise.resolve([]);
      return new Promise<O[]>((resolve, reject) => {
        queue.push({ items, resolve, reject });
        kick();
      });
    },
    async idle() {
      while (running) await running;
    },
  };
}
