/**
 * The side-effect log: a local HTTP server that the jobs' `http` task calls.
 *
 * It behaves like a downstream system that follows the Kairos docs: it
 * remembers, per job, the highest fencing token it has seen and refuses lower
 * ones. The check is made twice, as a careful downstream would:
 *   - when the request arrives (begin): a token below the highest seen is
 *     refused at once (409, "stale-begin");
 *   - when the work is written, after `?ms=` milliseconds (commit): if a higher
 *     token arrived meanwhile, the write is refused (409, "stale-commit").
 * Only a committed call answers 2xx, so an agent can only report success for
 * work that was actually written. A request whose connection closes before
 * the commit (the agent aborted its handler, or died) is recorded as
 * "aborted" and writes nothing.
 *
 * Every call is recorded with job id, attempt, fencing token and the
 * receiver's clock (Date.now(), the same host clock PostgreSQL reads).
 */
import { createServer, type Server } from 'node:http';

export type CallResult = 'committed' | 'stale-begin' | 'stale-commit' | 'aborted' | 'open';

export interface CallRecord {
  jobId: string;
  attempt: number;
  /** X-Kairos-Fencing-Token: the lease generation the caller held. */
  token: number;
  beganAt: number;
  /** Commit, refusal or abort time; null while open. */
  endedAt: number | null;
  result: CallResult;
}

export interface Receiver {
  readonly url: string;
  readonly host: string;
  readonly calls: CallRecord[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const calls: CallRecord[] = [];
  const highest = new Map<string, number>();

  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://receiver');
    const call: CallRecord = {
      jobId: String(request.headers['x-kairos-job-id'] ?? ''),
      attempt: Number(request.headers['x-kairos-attempt'] ?? 0),
      token: Number(request.headers['x-kairos-fencing-token'] ?? 0),
      beganAt: Date.now(),
      endedAt: null,
      result: 'open',
    };
    calls.push(call);
    request.resume();
    const end = (result: CallResult, status: number, body: string) => {
      if (call.result !== 'open') return;
      call.result = result;
      call.endedAt = Date.now();
      if (!response.destroyed) response.writeHead(status, { 'content-type': 'text/plain' }).end(body);
    };
    if (call.token < (highest.get(call.jobId) ?? 0)) {
      end('stale-begin', 409, 'stale fencing token');
      return;
    }
    highest.set(call.jobId, call.token);
    const delayMs = Math.max(0, Number(url.searchParams.get('ms') ?? 0));
    const timer = setTimeout(() => {
      if (call.token < (highest.get(call.jobId) ?? 0)) end('stale-commit', 409, 'stale fencing token at commit');
      else end('committed', 200, 'written');
    }, delayMs);
    response.on('close', () => {
      if (call.result === 'open') {
        clearTimeout(timer);
        call.result = 'aborted';
        call.endedAt = Date.now();
      }
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    host: `127.0.0.1:${port}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
