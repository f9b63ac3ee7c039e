/**
 * Worker-process side of the measurement. Every system's handler calls
 * `runBenchJob` with the job's payload, so start lag is taken the same way
 * everywhere: `Date.now()` as the handler begins, minus the due time the
 * bench wrote into the payload. Records are batched and sent to the bench
 * process over the IPC channel, so recording costs a few array pushes per job.
 */
import { RECORD_FIELDS, type BenchPayload, type ChildMessage } from './common';

const pending: number[] = [];
let timer: NodeJS.Timeout | undefined;

function send(message: ChildMessage): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send || !process.connected) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });
}

export function flushRecords(): Promise<void> {
  if (pending.length === 0) return Promise.resolve();
  return send({ t: 'rec', r: pending.splice(0, pending.length) });
}

function schedule(): void {
  if (pending.length >= RECORD_FIELDS * 4096) {
    void flushRecords();
    return;
  }
  if (timer) return;
  timer = setTimeout(() => {
    timer = undefined;
    void flushRecords();
  }, 50);
}

function readPayload(raw: unknown): BenchPayload {
  const value = (typeof raw === 'string' ? JSON.parse(raw) : raw) as Partial<BenchPayload> | null;
  return { p: Number(value?.p ?? -1), d: Number(value?.d ?? 0), ...(value?.s !== undefined ? { s: Number(value.s) } : {}) };
}

/**
 * The no-op handler: record and return. `assignedAt` (tracing only) is when
 * the worker process first saw the job, where the system reports it.
 */
export async function noopJob(raw: unknown, assignedAt = 0): Promise<void> {
  const startedAt = Date.now();
  const payload = readPayload(raw);
  pending.push(payload.p, payload.d, startedAt, Date.now(), assignedAt);
  schedule();
}

/** The sleep handler: sleep `s` ms (default 5 s), stopping early if aborted. */
export async function sleepJob(raw: unknown, signal?: AbortSignal, assignedAt = 0): Promise<void> {
  const startedAt = Date.now();
  const payload = readPayload(raw);
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(resolve, payload.s ?? 5_000);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
      },
      { once: true },
    );
  });
  pending.push(payload.p, payload.d, startedAt, Date.now(), assignedAt);
  schedule();
}

export function reportReady(): void {
  void send({ t: 'ready' });
}

export function reportError(error: unknown): Promise<void> {
  return send({ t: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
}

/**
 * Shut down on SIGTERM: stop the system's worker (which lets running handlers
 * finish), send the last records, exit. A second signal exits at once.
 */
export function onTerminate(stop: () => Promise<void>): void {
  let stopping = false;
  const handler = () => {
    if (stopping) process.exit(1);
    stopping = true;
    const hardStop = setTimeout(() => process.exit(1), 20_000);
    hardStop.unref();
    stop()
      .catch((error: unknown) => reportError(error))
      .then(() => flushRecords())
      .finally(() => process.exit(0));
  };
  process.on('SIGTERM', handler);
  process.on('SIGINT', handler);
  process.on('disconnect', handler);
}

/** A logger that drops everything below warn (the same policy for every system). */
export function quietLog(scope: string, level: string, message: string, meta?: unknown): void {
  if (level === 'warning' || level === 'warn' || level === 'error' || level === 'fatal') {
    process.stderr.write(`${JSON.stringify({ scope, level, message, meta })}\n`);
  }
}
