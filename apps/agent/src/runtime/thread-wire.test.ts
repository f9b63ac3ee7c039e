import { MessageChannel } from 'node:worker_threads';
import type { ToExecutor, ToSession } from './thread-messages';
import { TO_EXECUTOR, TO_SESSION, type ThreadWire } from './thread-wire';

const lease = { jobId: '5f0c1a52-3a4e-4c1b-9d7e-2f7d1c9e8a10', generation: 9_007_199_254_740_993n };

const toExecutor: ToExecutor[] = [
  {
    type: 'offer',
    lease: { ...lease, runId: '42', task: 'report', payloadJson: '{"ü":"✓"}', attempt: 2, maxAttempts: 5, timeoutMs: 0, scheduledForMs: 1_764_547_200_123, traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' },
  },
  { type: 'offer', lease: { ...lease, runId: '43', task: 't', payloadJson: '{}', attempt: 1, maxAttempts: 1, timeoutMs: 500, scheduledForMs: null, traceparent: null } },
  { type: 'offer', lease: { ...lease, runId: '44', task: 't', payloadJson: '{}', attempt: 1, maxAttempts: 1, timeoutMs: 500, scheduledForMs: null } },
  // Staged ahead of its start (a reading of the shared monotonic clock).
  { type: 'offer', lease: { ...lease, runId: '45', task: 't', payloadJson: '{}', attempt: 1, maxAttempts: 1, timeoutMs: 0, scheduledForMs: null }, staged: { startAt: 123_456.789, trustUntil: 125_000.5 } },
  { type: 'event', event: { name: 'outcome-acked', jobId: lease.jobId, generation: 3n, result: 'STALE' } },
  { type: 'lost', lease, reason: 'expired', source: 'trust-window' },
  { type: 'event', event: { name: 'connected', coordinatorId: 'c1', leaseMs: 10_000, heartbeatIntervalMs: 3_333 } },
  { type: 'log', level: 'debug', fields: { n: 1 }, msg: 'hello' },
  { type: 'drained', unacked: 0 },
];

const toSession: ToSession[] = [
  { type: 'started', lease },
  { type: 'outcome', lease, result: 'succeeded', error: '', finishedAtMs: 1_764_547_200_456, traceparent: null },
  { type: 'outcome', lease, result: 'failed', error: 'boom: ✗', finishedAtMs: 1 },
  { type: 'release', lease, reason: 'draining' },
  { type: 'drain' },
];

/** Packs, sends through a real MessageChannel (structured clone, as between the threads), unpacks. */
async function acrossPorts<T>(wire: ThreadWire<T>, batch: T[]): Promise<T[]> {
  const { port1, port2 } = new MessageChannel();
  try {
    const arrived = new Promise<readonly unknown[]>((resolve) => port2.once('message', resolve));
    port1.postMessage(wire.pack(batch));
    return wire.unpack(await arrived);
  } finally {
    port1.close();
    port2.close();
  }
}

describe('thread wire', () => {
  it('session -> handler thread: every message type arrives equal, in order', async () => {
    expect(await acrossPorts(TO_EXECUTOR, toExecutor)).toEqual(toExecutor);
  });

  it('handler -> session thread: every message type arrives equal, in order', async () => {
    expect(await acrossPorts(TO_SESSION, toSession)).toEqual(toSession);
  });

  it('packs per-job messages as flat values (no objects to clone) and leaves the rest as they are', () => {
    const packed = TO_EXECUTOR.pack(toExecutor.slice(0, 4));
    expect(packed.some((value) => typeof value === 'object' && value !== null)).toBe(false);
    expect(TO_SESSION.pack([{ type: 'drain' }])).toEqual([0, { type: 'drain' }]);
  });

  it('an empty batch', () => {
    expect(TO_EXECUTOR.unpack(TO_EXECUTOR.pack([]))).toEqual([]);
    expect(TO_SESSION.unpack(TO_SESSION.pack([]))).toEqual([]);
  });
});
