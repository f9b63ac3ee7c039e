/**
 * A byte-level TCP fault proxy, one per agent, between the agent and the
 * coordinators (gRPC over cleartext HTTP/2 needs nothing more than bytes).
 *
 * Modes (set at any time, applied to open and new connections):
 *   pass    bytes flow at once.
 *   drop    a blackhole: nothing flows either way. Bytes are held, not lost,
 *           as TCP would retransmit them, so when the fault heals the
 *           conversation resumes (with whatever the peers decided meanwhile).
 *   delay   every chunk is held `ms` before it is forwarded, order kept.
 *   reset   every open connection is reset (RST) at once, and every new one
 *           on arrival, until the mode changes.
 *   oneway  one direction is blackholed ('up' = agent -> coordinator,
 *           'down' = coordinator -> agent), the other flows.
 *
 * Each direction of each connection is a FIFO of chunks with a release time,
 * so switching from delay back to pass can never reorder bytes.
 *
 * Upstreams: `upstreams()` returns the coordinator addresses to try, in order
 * of preference; a refused connection falls through to the next, and if none
 * answers the agent's connection is reset (as a dead Service would look).
 */
import net from 'node:net';

export type ProxyMode =
  | { kind: 'pass' }
  | { kind: 'drop' }
  | { kind: 'delay'; ms: number }
  | { kind: 'reset' }
  | { kind: 'oneway'; blocked: 'up' | 'down' };

interface Chunk {
  data: Buffer;
  releaseAt: number;
}

interface Direction {
  readonly name: 'up' | 'down';
  readonly queue: Chunk[];
  ended: boolean;
  timer: NodeJS.Timeout | undefined;
}

interface Connection {
  readonly client: net.Socket;
  upstream: net.Socket | undefined;
  upstreamReady: boolean;
  readonly up: Direction;
  readonly down: Direction;
  closed: boolean;
}

export class FaultProxy {
  private server: net.Server | undefined;
  private mode: ProxyMode = { kind: 'pass' };
  private readonly connections = new Set<Connection>();
  /** Counters for the report and for tests. */
  readonly stats = { accepted: 0, reset: 0, refused: 0, bytesUp: 0, bytesDown: 0 };
  address = '';

  constructor(
    readonly name: string,
    private readonly upstreams: () => string[],
  ) {}

  async listen(port = 0): Promise<string> {
    const server = net.createServer((socket) => this.accept(socket));
    server.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    const address = server.address();
    if (address === null || typeof address !== 'object') throw new Error('proxy has no address');
    this.address = `127.0.0.1:${address.port}`;
    return this.address;
  }

  get currentMode(): ProxyMode {
    return this.mode;
  }

  get openConnections(): number {
    return this.connections.size;
  }

  setMode(mode: ProxyMode): void {
    this.mode = mode;
    if (mode.kind === 'reset') this.resetAll();
    for (const connection of this.connections) {
      this.pump(connection, connection.up);
      this.pump(connection, connection.down);
    }
  }

  /** Resets every open connection (RST to the agent and to the coordinator). */
  resetAll(): void {
    for (const connection of [...this.connections]) this.destroy(connection, true);
  }

  async close(): Promise<void> {
    this.resetAll();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    this.stats.accepted++;
    client.setNoDelay(true);
    if (this.mode.kind === 'reset') {
      this.stats.reset++;
      client.resetAndDestroy();
      return;
    }
    const connection: Connection = {
      client,
      upstream: undefined,
      upstreamReady: false,
      up: { name: 'up', queue: [], ended: false, timer: undefined },
      down: { name: 'down', queue: [], ended: false, timer: undefined },
      closed: false,
    };
    this.connections.add(connection);
    client.on('data', (data: Buffer) => this.enqueue(connection, connection.up, data));
    client.on('end', () => {
      connection.up.ended = true;
      this.pump(connection, connection.up);
    });
    client.on('error', () => this.destroy(connection, true));
    client.on('close', () => this.destroy(connection, false));
    this.connectUpstream(connection, this.upstreams(), 0);
  }

  private connectUpstream(connection: Connection, candidates: string[], index: number): void {
    if (connection.closed) return;
    const target = candidates[index];
    if (target === undefined) {
      this.stats.refused++;
      this.destroy(connection, true);
      return;
    }
    const [host, port] = splitAddress(target);
    const upstream = net.connect({ host, port });
    upstream.setNoDelay(true);
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      if (connection.closed) {
        upstream.destroy();
        return;
      }
      connection.upstream = upstream;
      connection.upstreamReady = true;
      upstream.on('data', (data: Buffer) => this.enqueue(connection, connection.down, data));
      upstream.on('end', () => {
        connection.down.ended = true;
        this.pump(connection, connection.down);
      });
      upstream.on('close', () => this.destroy(connection, false));
      this.pump(connection, connection.up);
    });
    upstream.on('error', () => {
      if (!connected) {
        upstream.destroy();
        this.connectUpstream(connection, candidates, index + 1);
      } else {
        this.destroy(connection, true);
      }
    });
  }

  private enqueue(connection: Connection, direction: Direction, data: Buffer): void {
    const delay = this.mode.kind === 'delay' ? this.mode.ms : 0;
    direction.queue.push({ data, releaseAt: Date.now() + delay });
    this.pump(connection, direction);
  }

  private blocked(direction: Direction): boolean {
    const mode = this.mode;
    return mode.kind === 'drop' || (mode.kind === 'oneway' && mode.blocked === direction.name);
  }

  /** Forwards what may be forwarded now, and arms a timer for the next delayed chunk. */
  private pump(connection: Connection, direction: Direction): void {
    if (connection.closed) return;
    if (direction.timer !== undefined) {
      clearTimeout(direction.timer);
      direction.timer = undefined;
    }
    if (this.blocked(direction)) return;
    const target = direction.name === 'up' ? connection.upstream : connection.client;
    if (target === undefined || (direction.name === 'up' && !connection.upstreamReady)) return;
    const now = Date.now();
    while (direction.queue.length > 0) {
      const head = direction.queue[0]!;
      if (head.releaseAt > now) {
        direction.timer = setTimeout(() => this.pump(connection, direction), head.releaseAt - now);
        return;
      }
      direction.queue.shift();
      if (direction.name === 'up') this.stats.bytesUp += head.data.length;
      else this.stats.bytesDown += head.data.length;
      target.write(head.data);
    }
    if (direction.ended && !target.writableEnded) target.end();
  }

  private destroy(connection: Connection, reset: boolean): void {
    if (connection.closed) return;
    connection.closed = true;
    this.connections.delete(connection);
    for (const direction of [connection.up, connection.down]) {
      if (direction.timer !== undefined) clearTimeout(direction.timer);
      direction.queue.length = 0;
    }
    if (reset) this.stats.reset++;
    for (const socket of [connection.client, connection.upstream]) {
      if (socket === undefined || socket.destroyed) continue;
      if (reset) socket.resetAndDestroy();
      else socket.destroy();
    }
  }
}

function splitAddress(address: string): [string, number] {
  const index = address.lastIndexOf(':');
  return [address.slice(0, index), Number(address.slice(index + 1))];
}
