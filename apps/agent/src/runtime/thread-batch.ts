/**
 * Message batching between the agent's two threads (thread-messages.ts).
 *
 * Every message that one side posts during one event-loop turn leaves as ONE
 * `postMessage` carrying an array, in posting order; the receiving side
 * delivers the array's messages one by one, in that order. A structured-clone
 * postMessage costs far more than the message itself (about a quarter of the
 * agent's CPU at thousands of jobs a second went to one postMessage per
 * offer, `started` and outcome), and the traffic comes in bursts: a batch of
 * Assignments becomes many offers in one turn, and the handlers those offers
 * start post their `started` in one turn too.
 *
 * Only the transport sees arrays: the session posts and handles single
 * messages (session.ts's `host.post` / `handle`), and so does agent.ts. What
 * crosses is the batch packed by a `ThreadWire` (thread-wire.ts): the per-job
 * messages as flat field values, which clone several times faster.
 *
 * Timing: a batch leaves at the end of the turn it was started in
 * (`setImmediate`). A message is therefore never held longer than the rest of
 * the current turn, but a handler that blocks the main thread without
 * yielding also holds back what the main thread posted earlier in that turn
 * (its own `started`), until it yields. The session needs nothing from the
 * handler thread to keep renewing, so heartbeats are unaffected.
 */

import type { ThreadWire } from './thread-wire';

/**
 * Returns `post(message)`, which queues `message` for the batch of the current turn; the batch leaves packed by `wire`.
 *
 * One array for every turn, emptied once its batch has left (`pack` copies it): its map never changes. With a
 * new array per turn, V8 deoptimized the handler thread's start path, which inlines this, at the push ("wrong
 * map": a fresh array has another elements kind), and recompiled `start` during the next spike, 20-60 ms of
 * compiling on the helper threads beside the drain (`--trace-deopt` in the benchmark).
 */
export function batchingPoster<T>(wire: ThreadWire<T>, postBatch: (packed: unknown[]) => void): (message: T) => void {
  const pending: T[] = [];
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    if (pending.length === 0) return;
    try {
      postBatch(wire.pack(pending));
    } finally {
      pending.length = 0;
    }
  };
  return (message) => {
    pending.push(message);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
}

/** The receiving side: unpacks a batch with `wire` and hands each message to `deliver`, in order. */
export function unbatching<T>(wire: ThreadWire<T>, deliver: (message: T) => void): (packed: readonly unknown[]) => void {
  return (packed) => {
    for (const message of wire.unpack(packed)) deliver(message);
  };
}
