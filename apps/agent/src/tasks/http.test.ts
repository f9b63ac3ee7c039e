import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { taskContext } from '../test-support/task-context';
import { httpTask, isHostAllowed } from './http';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

async function startServer(status = 200): Promise<{ server: Server; port: number; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      if (req.url === '/redirect') {
        res.writeHead(302, { location: 'http://elsewhere.example/' }).end();
        return;
      }
      res.writeHead(req.url === '/fail' ? 503 : status, { 'content-type': 'text/plain' }).end(req.url === '/fail' ? 'database is down' : 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, seen };
}

describe('isHostAllowed', () => {
  const allowed = (url: string, list: string[]) => isHostAllowed(new URL(url), list);

  it('matches a bare host on any port and host:port on that port only', () => {
    expect(allowed('https://api.example.com/x', ['api.example.com'])).toBe(true);
    expect(allowed('http://api.example.com:8080/x', ['API.example.com'])).toBe(true);
    expect(allowed('http://api.example.com:8080/x', ['api.example.com:8080'])).toBe(true);
    expect(allowed('http://api.example.com:8081/x', ['api.example.com:8080'])).toBe(false);
    expect(allowed('https://api.example.com/x', ['api.example.com:443'])).toBe(true);
    expect(allowed('http://api.example.com/x', ['api.example.com:443'])).toBe(false);
    expect(allowed('http://evil.example.com/x', ['example.com'])).toBe(false);
    expect(allowed('http://[::1]:9000/x', ['[::1]:9000'])).toBe(true);
    expect(allowed('http://[::1]:9000/x', ['::1'])).toBe(true);
    expect(allowed('http://localhost/x', [])).toBe(false);
  });
});

describe('http task', () => {
  let server: Server;
  let port: number;
  let seen: Seen[];

  beforeEach(async () => {
    ({ server, port, seen } = await startServer());
  });

  afterEach(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('POSTs JSON with the job, attempt and fencing-token headers', async () => {
    const task = httpTask([`127.0.0.1:${port}`]);
    const ctx = taskContext({ jobId: 'job-9', runId: 'run-9', attempt: 2, fencingToken: 17n });
    const result = await task({ url: `http://127.0.0.1:${port}/hook`, body: { invoice: 5 }, headers: { 'x-kairos-job-id': 'spoofed', 'x-extra': 'y' } }, ctx);
    expect(result).toEqual({ status: 200 });
    expect(seen).toHaveLength(1);
    const request = seen[0] as Seen;
    expect(request.method).toBe('POST');
    expect(request.url).toBe('/hook');
    expect(JSON.parse(request.body)).toEqual({ invoice: 5 });
    expect(request.headers).toMatchObject({
      'x-kairos-job-id': 'job-9',
      'x-kairos-run-id': 'run-9',
      'x-kairos-attempt': '2',
      'x-kairos-fencing-token': '17',
      'content-type': 'application/json',
      'x-extra': 'y',
    });
  });

  it('sends a string body as is with the given method', async () => {
    const task = httpTask(['127.0.0.1']);
    await task({ url: `http://127.0.0.1:${port}/put`, method: 'put', body: 'raw text' }, taskContext());
    expect(seen[0]).toMatchObject({ method: 'PUT', body: 'raw text' });
  });

  it('fails on a non-2xx status, naming it, and does not follow redirects', async () => {
    const task = httpTask([`127.0.0.1:${port}`]);
    await expect(task({ url: `http://127.0.0.1:${port}/fail` }, taskContext())).rejects.toThrow(
      /HTTP 503 Service Unavailable from http:\/\/127\.0\.0\.1:\d+: database is down/,
    );
    await expect(task({ url: `http://127.0.0.1:${port}/redirect` }, taskContext())).rejects.toThrow(/HTTP 302 .* not followed/);
    expect(seen.map((s) => s.url)).toEqual(['/fail', '/redirect']);
  });

  it('refuses hosts that are not allow-listed without sending anything', async () => {
    await expect(httpTask([])({ url: `http://127.0.0.1:${port}/` }, taskContext())).rejects.toThrow(/not on this agent's HTTP allow-list/);
    await expect(httpTask([`127.0.0.1:${port + 1}`])({ url: `http://127.0.0.1:${port}/` }, taskContext())).rejects.toThrow(/allow-list/);
    await expect(httpTask(['localhost'])({ url: `http://127.0.0.1:${port}/` }, taskContext())).rejects.toThrow(/allow-list/);
    expect(seen).toHaveLength(0);
  });

  it('names the bad field of an invalid payload', async () => {
    const task = httpTask(['127.0.0.1']);
    await expect(task({}, taskContext())).rejects.toThrow(/invalid payload field "url"/);
    await expect(task({ url: 'http://127.0.0.1/', timeoutMs: -5 }, taskContext())).rejects.toThrow(/"timeoutMs"/);
    await expect(task({ url: 'http://127.0.0.1/', method: 'GET', body: 'x' }, taskContext())).rejects.toThrow(/"body"/);
    await expect(task({ url: 'http://127.0.0.1/', colour: 'red' }, taskContext())).rejects.toThrow(/"colour": unknown field/);
    await expect(task({ url: 'ftp://127.0.0.1/' }, taskContext())).rejects.toThrow(/"url": only http and https/);
    expect(seen).toHaveLength(0);
  });

  it('stops when the run is aborted', async () => {
    const hanging = createServer(() => {
      // never answers
    });
    await new Promise<void>((resolve) => hanging.listen(0, '127.0.0.1', resolve));
    const hangingPort = (hanging.address() as AddressInfo).port;
    const controller = new AbortController();
    const pending = httpTask(['127.0.0.1'])({ url: `http://127.0.0.1:${hangingPort}/` }, taskContext({ signal: controller.signal }));
    controller.abort(new Error('timeout'));
    await expect(pending).rejects.toThrow();
    hanging.closeAllConnections();
    await new Promise((resolve) => hanging.close(resolve));
  });
});
