/**
 * The side-effect log for end-to-end tests: a local HTTP server that jobs of
 * the `http` task call. It records each request's job id, attempt, fencing
 * token and times, holds the response for `?ms=` milliseconds (a handler that
 * takes time), answers `?status=` (failures), and — like a downstream system
 * should — rejects a fencing token lower than one already seen for the job.
 */
import { createServer, type Server } from 'node:http';

export interface ReceivedCall {
  jobId: string;
  attempt: number;
  fencingToken: number;
  startedAt: number;
  finishedAt: number | null;
  rejectedAsStale: boolean;
  aborted: boolean;
}

export interface Receiver {
  url: string;
  calls: ReceivedCall[];
  close(): Promise<void>;
}

export async function startReceiver(): Promise<Receiver> {
  const calls: ReceivedCall[] = [];
  const highest = new Map<string, number>();
  const server: Server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://receiver');
    const call: ReceivedCall = {
      jobId: String(request.headers['x-kairos-job-id'] ?? ''),
      attempt: Number(request.headers['x-kairos-attempt'] ?? 0),
      fencingToken: Number(request.headers['x-kairos-fencing-token'] ?? 0),
      startedAt: Date.now(),
      finishedAt: null,
      rejectedAsStale: false,
      aborted: false,
    };
    calls.push(call);
    if (call.fencingToken < (highest.get(call.jobId) ?? 0)) {
      call.rejectedAsStale = true;
      call.finishedAt = Date.now();
      response.writeHead(409).end('stale fencing token');
      return;
    }
    highest.set(call.jobId, call.fencingToken);
    request.resume();
    const status = Number(url.searchParams.get('status') ?? 200);
    const timer = setTimeout(() => {
      call.finishedAt = Date.now();
      response.writeHead(status).end('done');
    }, Number(url.searchParams.get('ms') ?? 0));
    response.on('close', () => {
      if (call.finishedAt === null) {
        clearTimeout(timer);
        call.aborted = true;
        call.finishedAt = Date.now();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
