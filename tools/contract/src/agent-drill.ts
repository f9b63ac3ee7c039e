/**
 * What every packaged form of the agent must do (the npm tarball, the single
 * executable): with the agent already started against a coordinator, run a
 * job as `workerId`, then drain on SIGTERM while a job is known to be running
 * in its handler, exit 0 once that job finished, and leave it COMPLETED.
 */
import {
  createTestDatabase,
  restClient,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type CoordinatorProcess,
  type HeldCalls,
  type ManagedProcess,
  type TestDatabase,
} from '@kairos/testing';

export interface Fleet {
  coordinator: CoordinatorProcess;
  /** REST as a writer of namespace `fleet`. */
  api: ReturnType<typeof restClient>;
  /** An agent token of namespace `fleet`. */
  agentToken: string;
  /** Stops every process the test started and drops the database. */
  stop(): Promise<void>;
}

/** A database and a coordinator that requires tokens, with a writer's client and an agent token. */
export async function startFleet(): Promise<Fleet> {
  const db: TestDatabase = await createTestDatabase();
  const store = db.createStore();
  const agentToken = (await store.tokens.create({ namespace: 'fleet', role: 'agent' })).secret;
  const writer = (await store.tokens.create({ namespace: 'fleet', role: 'writer' })).secret;
  const coordinator = await startCoordinatorProcess({ databaseUrl: db.url, auth: true });
  return {
    coordinator,
    api: restClient(coordinator.httpUrl, writer),
    agentToken,
    async stop() {
      await stopAll();
      await db.drop();
    },
  };
}

export async function runsAJobThenDrains(options: {
  agent: ManagedProcess;
  api: ReturnType<typeof restClient>;
  held: HeldCalls;
  workerId: string;
  /** Checked between the first job and the drain, while the agent is connected and idle. */
  whileConnected?: () => Promise<void>;
}): Promise<void> {
  const { agent, api, held, workerId } = options;
  const create = async (task: string, payload: Record<string, unknown>) =>
    (await api.createJob({ task, runAt: new Date().toISOString(), payload })).body.jobId as string;
  const first = await create('sleep', { seconds: 0 });
  await waitFor(async () => (await api.getJob(first)).body.state === 'COMPLETED', { timeoutMs: 30_000, description: 'the first job COMPLETED' });
  const runs = (await api.runs(first)).body.runs as Array<{ workerId: string; outcome: string }>;
  if (JSON.stringify(runs.map((r) => [r.workerId, r.outcome])) !== JSON.stringify([[workerId, 'SUCCEEDED']])) {
    throw new Error(`the first job's runs: ${JSON.stringify(runs)}`);
  }
  await options.whileConnected?.();
  // Held open by the test: known to be running in the handler (a SIGTERM before the assignment
  // arrives makes the draining agent give it back unstarted), and it ends only after the drain began.
  const long = await create('http', { url: held.url() });
  await held.arrived();
  agent.signal('SIGTERM');
  await waitFor(() => agent.lines.some((line) => String(line.msg).startsWith('draining')), { timeoutMs: 30_000, description: 'the agent draining' });
  held.release();
  const exit = await agent.exited;
  if (exit !== 0) throw new Error(`the agent exited with ${String(exit)} after draining`);
  const state = (await api.getJob(long)).body.state;
  if (state !== 'COMPLETED') throw new Error(`the job running during the drain is ${String(state)}, not COMPLETED`);
  if (!agent.lines.some((line) => line.msg === 'drained')) throw new Error('the agent never logged "drained"');
}
