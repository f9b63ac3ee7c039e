/**
 * Agents spread across coordinators (dispatch/rebalance.ts). Six agents reach
 * the coordinators through a loopback TCP proxy that plays the Kubernetes
 * Service: each new connection goes to the next backend in turn. All six
 * connect while only c1 exists; c2 starts afterwards and joins the proxy.
 * Within the stated time each coordinator serves three, and the jobs that
 * were running on the moved agents all the while finish as they would have:
 * one run each, SUCCEEDED, attempt 1, nothing expired or run twice. Then the
 * agents' health endpoints say ready, and a draining agent says not ready.
 */
import net, { type AddressInfo } from 'node:net';
import {
  createTestDatabase,
  metricValue,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  startHeldCalls,
  stopAll,
  waitFor,
  type CoordinatorProcess,
  type HeldCalls,
  type ManagedProcess,
  type TestDatabase,
} from '@kairos/testing';

/** The stated bound: c2 is up, its agents are there this much later (a few presence intervals; loaded CI included). */
const SPREAD_WITHIN_MS = 30_000;

/** A round-robin TCP proxy over a list of backends that can grow: what a ClusterIP Service does per connection. */
async function startServiceProxy(): Promise<{ address: string; backends: string[]; close(): Promise<void> }> {
  const backends: string[] = [];
  const sockets = new Set<net.Socket>();
  let next = 0;
  const server = net.createServer((client) => {
    const backend = backends[next++ % backends.length]!;
    const [host, port] = [backend.slice(0, backend.lastIndexOf(':')), Number(backend.slice(backend.lastIndexOf(':') + 1))];
    const upstream = net.connect(port, host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    backends,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

type AgentRow = { agentId: string; coordinatorId: string; draining: boolean };

describe('agents spread across coordinators', () => {
  let db: TestDatabase;
  let c1: CoordinatorProcess;
  let c2: CoordinatorProcess;
  let proxy: Awaited<ReturnType<typeof startServiceProxy>>;
  const agents: ManagedProcess[] = [];
  // The jobs running on the agents while they move: http calls this test holds open.
  let held: HeldCalls;

  const env = { KAIROS_PRESENCE_INTERVAL_MS: '300' };
  const agentsBy = async (coordinator: CoordinatorProcess) => ((await restClient(coordinator.httpUrl).agents()).body as AgentRow[]).filter((a) => !a.draining);
  const spread = async () => {
    const rows = await agentsBy(c1);
    const on = (id: string) => rows.filter((row) => row.coordinatorId === id).length;
    return { c1: on('c1'), c2: on('c2'), total: rows.length };
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    held = await startHeldCalls();
    proxy = await startServiceProxy();
    c1 = await startCoordinatorProcess({ databaseUrl: db.url, name: 'c1', env });
    proxy.backends.push(c1.grpcAddress);
    for (let i = 1; i <= 6; i++) {
      agents.push(
        await startAgentProcess({
          coordinator: proxy.address,
          agentId: `agent-${i}`,
          tasks: 'http',
          capacity: 2,
          env: { KAIROS_AGENT_HEALTH_PORT: '0', KAIROS_AGENT_HEALTH_HOST: '127.0.0.1' },
        }),
      );
    }
  }, 60_000);

  afterAll(async () => {
    held?.release();
    await stopAll();
    await proxy?.close();
    await held?.close();
    await db?.drop();
  });

  test('six agents on c1; c2 starts; within the bound each serves three, and the runs in flight are untouched', async () => {
    await waitFor(async () => (await spread()).c1 === 6, { timeoutMs: 30_000, description: 'six agents on c1' });
    const api = restClient(c1.httpUrl);
    const jobIds: string[] = [];
    for (let i = 0; i < 6; i++) {
      jobIds.push((await api.createJob({ task: 'http', runAt: new Date().toISOString(), payload: { url: held.url(`/hold/${i}`) } })).body.jobId);
    }
    await held.arrived(6);

    c2 = await startCoordinatorProcess({ databaseUrl: db.url, name: 'c2', env });
    proxy.backends.push(c2.grpcAddress);
    const since = Date.now();
    await waitFor(
      async () => {
        const now = await spread();
        return now.c1 === 3 && now.c2 === 3;
      },
      { timeoutMs: SPREAD_WITHIN_MS, description: 'three agents on each coordinator' },
    );
    const tookMs = Date.now() - since;
    // Through the other coordinator too (its own agents live, the others from the store).
    await waitFor(async () => (await agentsBy(c2)).length === 6, { timeoutMs: 10_000, description: 'c2 sees all six' });
    expect(await metricValue(c1.httpUrl, 'kairos_agents_rebalanced_total')).toBeGreaterThanOrEqual(3);
    expect(tookMs).toBeLessThan(SPREAD_WITHIN_MS);

    // Every held run is still the one that started, and finishes as if nothing happened.
    held.release();
    await waitFor(async () => {
      for (const id of jobIds) if ((await api.getJob(id)).body.state !== 'COMPLETED') return false;
      return true;
    }, { timeoutMs: 30_000, description: 'the held jobs COMPLETED' });
    for (const id of jobIds) {
      const runs = (await api.runs(id)).body.runs as Array<{ outcome: string; attempt: number }>;
      expect(runs.map((run) => [run.outcome, run.attempt])).toEqual([['SUCCEEDED', 1]]);
    }
    expect([...held.arrivals].sort()).toEqual([...jobIds].sort());
    for (const agent of agents) expect(agent.lines.some((line) => line.msg === 'lease lost' || line.level === 50)).toBe(false);
  }, 120_000);

  test('an agent health endpoint answers ready while connected, and not ready once it drains', async () => {
    const agent = agents[0]!;
    const { healthPort } = await agent.waitForLine((line) => line.msg === 'health endpoint listening (/livez, /readyz)');
    const get = async (path: string) => {
      const response = await fetch(`http://127.0.0.1:${Number(healthPort)}${path}`);
      return { status: response.status, body: (await response.json()) as { connected: boolean; draining: boolean; coordinatorId: string | null } };
    };
    expect(await get('/livez')).toMatchObject({ status: 200 });
    const ready = await get('/readyz');
    expect(ready).toMatchObject({ status: 200, body: { connected: true, draining: false } });
    expect(['c1', 'c2']).toContain(ready.body.coordinatorId);
    expect((await get('/nothing')).status).toBe(404);
    agent.signal('SIGTERM');
    await agent.waitForLine((line) => line.msg === 'signal received: draining');
    // The agent has nothing running, so it may exit at once: either it says not ready, or it is gone.
    const answer = await get('/readyz').catch(() => undefined);
    if (answer) expect(answer).toMatchObject({ status: 503, body: { draining: true } });
    expect(await agent.exited).toBe(0);
  }, 60_000);
});
