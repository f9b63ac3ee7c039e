/**
 * The REST server's resource limits against slow and greedy peers: a body that
 * trickles in, headers that never finish, and more connections than allowed.
 * Raw sockets, a real coordinator process with small limits.
 */
import net from 'node:net';
import { createTestDatabase, startCoordinatorProcess, stopAll, waitFor, type CoordinatorProcess, type TestDatabase } from '@kairos/testing';

/** Opens a socket, sends `text`, and resolves with everything received until the server closes it. */
function converse(port: number, text: string): { closed: Promise<string>; socket: net.Socket } {
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => undefined);
  socket.write(text);
  return { socket, closed: new Promise((resolve) => socket.on('close', () => resolve(received))) };
}

describe('REST resource limits', () => {
  let db: TestDatabase;
  let coordinator: CoordinatorProcess;
  let port: number;

  beforeAll(async () => {
    db = await createTestDatabase();
    coordinator = await startCoordinatorProcess({
      databaseUrl: db.url,
      env: {
        KAIROS_HTTP_REQUEST_TIMEOUT_MS: '1000',
        KAIROS_HTTP_HEADERS_TIMEOUT_MS: '800',
        KAIROS_HTTP_MAX_CONNECTIONS: '4',
      },
    });
    port = Number(new URL(coordinator.httpUrl).port);
  }, 60_000);

  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });

  it('answers 408 and closes when a request body trickles in slower than the request timeout', async () => {
    const { closed } = converse(
      port,
      'POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"task":',
    );
    expect(await closed).toMatch(/^HTTP\/1\.1 408/);
  });

  it('closes a connection whose headers never finish', async () => {
    const { closed } = converse(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n');
    expect(await closed).toMatch(/^HTTP\/1\.1 408/);
  });

  it('refuses connections beyond the cap, and serves again once they close', async () => {
    const idle = Array.from({ length: 4 }, () => converse(port, ''));
    await Promise.all(idle.map(({ socket }) => new Promise((resolve) => socket.once('connect', resolve))));
    const extra = converse(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(await extra.closed).toBe('');
    idle.forEach(({ socket }) => socket.destroy());
    await Promise.all(idle.map(({ closed }) => closed));
    // The server counts a connection gone once it has seen it close: poll until one is served.
    await waitFor(async () => /^HTTP\/1\.1 200/.test(await converse(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n').closed), {
      timeoutMs: 5_000,
      description: 'a connection to be served after the idle ones closed',
    });
  });
});
