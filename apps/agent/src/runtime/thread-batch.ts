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
 * messages (session.ts's `host.post` / `handle`), and so does agent.ts.
 *
 * Timing: a batch leaves at the end of the turn it was started in
 * (`setImmediate`). A message is therefore never held longer than the rest of
 * the current turn, but a handler that blocks the main thread without
 * yielding also holds back what the main thread posted earlier in that turn
 * (its own `started`), until it yields. The session needs nothing from the
 * handler thread to keep renewing, so heartbeats are unaffected.
 */

/** Returns `post(message)`, which queues `message` for the batch of the current turn. */
export function batchingPoster<T>(postBatch: (batch: T[]) => void): (message: T) => void {
  let pending: T[] | undefined;
  const flush = (): void => {
    const batch = pending;
    pending = undefined;
    if (batch !== undefined) postBatch(batch);
  };
  return (message) => {
    if (pending === undefined) {
      pending = [message];
      setImmediate(flush);
    } else {
      pending.push(message);
    }
  };
}

/** The receiving side: hands each message of a batch to `deliver`, in order. */
export function unbatching<T>(deliver: (message: T) => void): (batch: readonly T[]) => void {
  return (batch) => {
    for (const message of batch) deliver(message);
  };
}
