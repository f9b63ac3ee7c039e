/**
 * A local HTTP server that records every call and holds calls open until the
 * test releases them: an `http` job pointed at it is known to be running in
 * its agent's handler (not only claimed) from its arrival until `release()`,
 * which is what tests of draining, moving and scaling agents need to assert
 * "a run in flight". `hold` picks which calls are held (default: all); the
 * others are answered at once, and every call is recorded with its path, body
 * and arrival time (`Date.now()`), so tests can also assert when a job ran and
 * with which payload.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HeldCall {
  path: string;
  /** x-kairos-job-id */
  jobId: string;
  body: string;
  /** Date.now() when the request arrived. */
  at: number;
}

export interface HeldCalls {
  /** http://127.0.0.1:<port><path> */
  url(path?: string): string;
  readonly port: number;
  /** The x-kairos-job-id of every call that arrived, in order. */
  readonly arrivals: string[];
  /** Every call that arrived, in order. */
  readonly calls: HeldCall[];
  /** The calls to `path`. */
  callsTo(path: string): HeldCall[];
  /** Resolves once `count` calls have arrived (default 1). */
  arrived(count?: number): Promise<void>;
  /** Answers every held call (and any later one at once). */
  release(): void;
  close(): Promise<void>;
}

export async function startHeldCalls(options: { hold?: (path: string) => boolean } = {}): Promise<HeldCalls> {
  const hold = options.hold ?? (() => true);
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const calls: HeldCall[] = [];
  const arrivals: string[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const server = http.createServer((request, response) => {
    const at = Date.now();
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const path = request.url ?? '/';
      const jobId = String(request.headers['x-kairos-job-id'] ?? '');
      calls.push({ path, jobId, body: Buffer.concat(chunks).toString('utf8'), at });
      arrivals.push(jobId);
      for (const waiter of [...waiters]) {
        if (arrivals.length >= waiter.count) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve();
        }
      }
      if (hold(path)) void held.then(() => response.end('ok'));
      else response.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path = '/hold') => `http://127.0.0.1:${port}${path}`,
    arrivals,
    calls,
    callsTo: (path) => calls.filter((call) => call.path === path),
    arrived: (count = 1) => (arrivals.length >= count ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ count, resolve }))),
    release,
    close: () =>
      new Promise<void>((resolve) => {
        release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
