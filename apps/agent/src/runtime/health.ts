/**
 * The agent's probe endpoint (KAIROS_AGENT_HEALTH_PORT), plain HTTP:
 *
 *   GET /livez   200 while the process answers (the event loop turns).
 *   GET /readyz  200 when a coordinator has welcomed the agent's stream and
 *                the agent is not draining; 503 otherwise. Both answer
 *                `{connected, draining, coordinatorId}`.
 *
 * A Kubernetes readiness probe on /readyz keeps a rollout from counting an
 * agent that cannot reach any coordinator; liveness stays on /livez, since a
 * coordinator outage is no reason to restart agents that are still running
 * (and renewing) work. Nothing else is served; no job data leaves here.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AgentEvents } from './events';

export interface HealthServer {
  /** The bound port (useful when 0 was asked for). */
  readonly port: number;
  /** From now on /readyz answers 503: the agent takes no new work. */
  setDraining(): void;
  close(): Promise<void>;
}

export async function startHealthServer(events: AgentEvents, options: { port: number; host: string }): Promise<HealthServer> {
  let coordinatorId: string | null = null;
  let draining = false;
  events.on('connected', (info) => {
    coordinatorId = info.coordinatorId;
  });
  events.on('disconnected', () => {
    coordinatorId = null;
  });
  events.on('drained', () => {
    coordinatorId = null;
  });
  const server = http.createServer((request, response) => {
    const url = (request.url ?? '/').split('?')[0];
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    const state = { connected: coordinatorId !== null, draining, coordinatorId };
    const status = url === '/livez' ? 200 : url === '/readyz' ? (state.connected && !draining ? 200 : 503) : 404;
    const body = status === 404 ? { error: 'not found: the agent serves /livez and /readyz' } : state;
    response.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body));
  });
  // Probes are short: never let a slow peer hold a socket.
  server.requestTimeout = 5_000;
  server.headersTimeout = 5_000;
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    setDraining() {
      draining = true;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
