/**
 * A local HTTP server whose calls it holds open until the test releases them:
 * an `http` job pointed at it is known to be running in its agent's handler
 * (not only claimed) from its arrival until `release()`, which is what tests
 * of draining, moving and scaling agents need to assert "a run in flight".
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HeldCalls {
  /** http://127.0.0.1:<port><path> */
  url(path?: string): string;
  readonly port: number;
  /** The x-kairos-job-id of every call that arrived, in order. */
  readonly arrivals: string[];
  /** Resolves once `count` calls have arrived (default 1). */
  arrived(count?: number): Promise<void>;
  /** Answers every held call (and any later one at once). */
  release(): void;
  close(): Promise<void>;
}

export async function startHeldCalls(): Promise<HeldCalls> {
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  const arrivals: string[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const server = http.createServer((request, response) => {
    request.resume();
    arrivals.push(String(request.headers['x-kairos-job-id'] ?? ''));
    for (const waiter of [...waiters]) {
      if (arrivals.length >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
    void held.then(() => response.end('ok'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path = '/hold') => `http://127.0.0.1:${port}${path}`,
    arrivals,
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
