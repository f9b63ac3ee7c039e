/**
 * How a batch of thread messages (thread-messages.ts) crosses `postMessage`:
 * the per-job messages — `offer` and the `outcome-acked` event one way,
 * `started` and `outcome` the other — as their field values in one flat array,
 * everything else as the object itself.
 *
 * Why: a structured clone writes every object's property names with its
 * values, so a batch of 256 offers cloned as objects cost the session thread
 * about 7 µs per job in the bench's profiles, on both threads together more
 * than the protobuf work of the job. A flat array of numbers, strings and
 * bigints clones several times faster (docs/benchmarks.md, "CPU per job").
 *
 * The layout is private to this module: `pack` and `unpack` are inverses
 * (thread-wire.test.ts), and the key lists below fail the build when a
 * message type gains a field they do not carry.
 */
import type { LeaseKey, LeaseOffer, ToExecutor, ToSession } from './thread-messages';

/** Packs a batch into what crosses the thread boundary, and back. */
export interface ThreadWire<T> {
  /** A new array: the sender empties and reuses `batch` once it has been posted (thread-batch.ts). */
  pack(batch: readonly T[]): unknown[];
  unpack(flat: readonly unknown[]): T[];
}

// Each message starts with a code; OTHER carries the object as it is.
const OTHER = 0;
const OFFER = 1;
const OUTCOME_ACKED = 2;
const STARTED = 1;
const OUTCOME = 2;

/** Compile-time check: `Keys` names every key of `T` (a new field must be packed). */
type Exhaustive<T, Keys extends readonly (keyof T)[]> = Exclude<keyof T, Keys[number]> extends never ? Keys : never;

const OFFER_KEYS = [
  'jobId',
  'generation',
  'runId',
  'task',
  'payloadJson',
  'attempt',
  'maxAttempts',
  'timeoutMs',
  'scheduledForMs',
  'traceparent',
] as const;
const offerKeys: Exhaustive<LeaseOffer, typeof OFFER_KEYS> = OFFER_KEYS;

// `started` and `outcome` carry a lease by its key only.
const LEASE_KEYS = ['jobId', 'generation'] as const;
const leaseKeys: Exhaustive<LeaseKey, typeof LEASE_KEYS> = LEASE_KEYS;

type Outcome = Extract<ToSession, { type: 'outcome' }>;
const OUTCOME_KEYS = ['type', 'lease', 'result', 'error', 'finishedAtMs', 'traceparent'] as const;
const outcomeKeys: Exhaustive<Outcome, typeof OUTCOME_KEYS> = OUTCOME_KEYS;

type Started = Extract<ToSession, { type: 'started' }>;
const STARTED_KEYS = ['type', 'lease'] as const;
const startedKeys: Exhaustive<Started, typeof STARTED_KEYS> = STARTED_KEYS;

type OutcomeAcked = Extract<Extract<ToExecutor, { type: 'event' }>['event'], { name: 'outcome-acked' }>;
const ACKED_KEYS = ['name', 'jobId', 'generation', 'result'] as const;
const ackedKeys: Exhaustive<OutcomeAcked, typeof ACKED_KEYS> = ACKED_KEYS;

/** The key lists exist for the compile-time checks above; this keeps them referenced. */
export const PACKED_KEYS = { offer: offerKeys, lease: leaseKeys, outcome: outcomeKeys, started: startedKeys, outcomeAcked: ackedKeys };

function packToExecutor(batch: readonly ToExecutor[]): unknown[] {
  const flat: unknown[] = [];
  for (const message of batch) {
    if (message.type === 'offer') {
      const o = message.lease;
      flat.push(OFFER, o.jobId, o.generation, o.runId, o.task, o.payloadJson, o.attempt, o.maxAttempts, o.timeoutMs, o.scheduledForMs, o.traceparent, message.staged?.startAt, message.staged?.trustUntil);
    } else if (message.type === 'event' && message.event.name === 'outcome-acked') {
      const e = message.event;
      flat.push(OUTCOME_ACKED, e.jobId, e.generation, e.result);
    } else {
      flat.push(OTHER, message);
    }
  }
  return flat;
}

function unpackToExecutor(flat: readonly unknown[]): ToExecutor[] {
  const batch: ToExecutor[] = [];
  let i = 0;
  while (i < flat.length) {
    const code = flat[i++];
    if (code === OFFER) {
      const lease: LeaseOffer = {
        jobId: flat[i] as string,
        generation: flat[i + 1] as bigint,
        runId: flat[i + 2] as string,
        task: flat[i + 3] as string,
        payloadJson: flat[i + 4] as string,
        attempt: flat[i + 5] as number,
        maxAttempts: flat[i + 6] as number,
        timeoutMs: flat[i + 7] as number,
        scheduledForMs: flat[i + 8] as number | null,
        ...(flat[i + 9] === undefined ? {} : { traceparent: flat[i + 9] as string | null }),
      };
      const startAt = flat[i + 10] as number | undefined;
      const trustUntil = flat[i + 11] as number;
      i += 12;
      batch.push(startAt === undefined ? { type: 'offer', lease } : { type: 'offer', lease, staged: { startAt, trustUntil } });
    } else if (code === OUTCOME_ACKED) {
      const event = { name: 'outcome-acked', jobId: flat[i] as string, generation: flat[i + 1] as bigint, result: flat[i + 2] as OutcomeAcked['result'] } as const;
      i += 3;
      batch.push({ type: 'event', event });
    } else {
      batch.push(flat[i++] as ToExecutor);
    }
  }
  return batch;
}

function packToSession(batch: readonly ToSession[]): unknown[] {
  const flat: unknown[] = [];
  for (const message of batch) {
    if (message.type === 'started') {
      flat.push(STARTED, message.lease.jobId, message.lease.generation);
    } else if (message.type === 'outcome') {
      flat.push(OUTCOME, message.lease.jobId, message.lease.generation, message.result, message.error, message.finishedAtMs, message.traceparent);
    } else {
      flat.push(OTHER, message);
    }
  }
  return flat;
}

function unpackToSession(flat: readonly unknown[]): ToSession[] {
  const batch: ToSession[] = [];
  let i = 0;
  while (i < flat.length) {
    const code = flat[i++];
    if (code === STARTED) {
      batch.push({ type: 'started', lease: { jobId: flat[i] as string, generation: flat[i + 1] as bigint } });
      i += 2;
    } else if (code === OUTCOME) {
      batch.push({
        type: 'outcome',
        lease: { jobId: flat[i] as string, generation: flat[i + 1] as bigint },
        result: flat[i + 2] as Outcome['result'],
        error: flat[i + 3] as string,
        finishedAtMs: flat[i + 4] as number,
        ...(flat[i + 5] === undefined ? {} : { traceparent: flat[i + 5] as string | null }),
      });
      i += 6;
    } else {
      batch.push(flat[i++] as ToSession);
    }
  }
  return batch;
}

/** Session thread -> handler thread. */
export const TO_EXECUTOR: ThreadWire<ToExecutor> = { pack: packToExecutor, unpack: unpackToExecutor };
/** Handler thread -> session thread. */
export const TO_SESSION: ThreadWire<ToSession> = { pack: packToSession, unpack: unpackToSession };
