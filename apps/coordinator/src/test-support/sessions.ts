/**
 * Dispatcher tests drive the dispatcher's own session objects, without
 * streams: what it sends an agent is collected in `sent`.
 */
import { pino } from 'pino';
import type { Store } from '@kairos/store';
import { createTestDatabase, type TestDatabase } from '@kairos/testing';
import { coordinatorOptionsFromEnv } from '../config';
import { newSession, type AgentSession, type CoordinatorMessageInit } from '../dispatch/agent-session';
import { createDispatcher, type Dispatcher } from '../dispatch/dispatcher';
import { createMetrics, type Metrics } from '../metrics';

/**
 * `preDispatchQueue` > 0: an agent that takes pre-dispatched leases, with a start queue that long.
 * `slotsFreeOnOutcome`: it announced Hello.slots_free_on_outcome.
 */
export function fakeSession(
  agentId: string,
  tasks: string[],
  sent: CoordinatorMessageInit[] = [],
  capacity = 4,
  preDispatchQueue = 0,
  { slotsFreeOnOutcome = false } = {},
): AgentSession {
  const preDispatch = preDispatchQueue > 0;
  const agent = { agentId, namespace: 'default', tokenId: null, tasks, capacity, version: 'test', preDispatch, preDispatchQueue, slotsFreeOnOutcome };
  const session = newSession(
    { kind: 'active', agent },
    { send: (message) => void sent.push(message), end: () => undefined },
  );
  return { ...session, sessionId: Number(agentId.replace(/\D/g, '') || 0) };
}

/**
 * `store` with one lease statement held at a gate, so a test can order it
 * against others: `before` (the default) waits before the real statement,
 * `after` runs it (it has read and committed) and waits before answering.
 * `reached()` says a call got to the gate; `open()` lets it, and every later
 * call, through.
 */
export function gatedLease(
  store: Store,
  statement: 'release' | 'complete' | 'renew',
  at: 'before' | 'after' = 'before',
): { store: Store; reached(): boolean; open(): void } {
  let open: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let reached = false;
  const real = store.lease[statement] as (...args: unknown[]) => Promise<unknown>;
  const gated = async (...args: unknown[]): Promise<unknown> => {
    if (at === 'after') {
      const answer = await real(...args);
      reached = true;
      await gate;
      return answer;
    }
    reached = true;
    await gate;
    return real(...args);
  };
  return { store: { ...store, lease: { ...store.lease, [statement]: gated } }, reached: () => reached, open: () => open() };
}

/** Metrics whose cluster-wide gauges read nothing (no database queries of their own). */
function quietMetrics(): Metrics {
  return createMetrics({
    countDueNextMinute: async () => 0,
    demand: async () => [],
    demandHorizonMs: 1,
    overdue: async () => ({ oldestMs: null, tasks: [] }),
    agents: async () => [],
  });
}

/**
 * A dispatcher on `store` with the default options, no periodic wake-ups to
 * speak of (a minute), silent. `preDispatch`: with a database clock reading
 * (1 ms of error), so it pre-dispatches to agents that take it.
 */
export function testDispatcher(store: Store, { preDispatch = false } = {}): Dispatcher {
  const options = coordinatorOptionsFromEnv({}, { pollIntervalMs: 60_000, dbPoolSize: 10 });
  const dbClock = preDispatch ? { errorMs: () => 1 } : undefined;
  return createDispatcher({ store, options, logger: pino({ level: 'silent' }), metrics: quietMetrics(), ...(dbClock ? { dbClock } : {}) });
}

/**
 * A dispatcher test file's set-up: a test database made before its tests and
 * dropped after them, and `dispatcher()` (testDispatcher), whose dispatchers
 * are stopped after them too. Call it in the `describe` body.
 */
export function dispatcherTestBed(): { readonly db: TestDatabase; dispatcher(store: Store, options?: { preDispatch?: boolean }): Dispatcher } {
  let db: TestDatabase | undefined;
  const made: Dispatcher[] = [];
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const dispatcher of made) await dispatcher.stop();
    await db?.drop();
  });
  return {
    get db() {
      if (db === undefined) throw new Error('the test database is made in beforeAll');
      return db;
    },
    dispatcher(store, options) {
      const dispatcher = testDispatcher(store, options);
      made.push(dispatcher);
      return dispatcher;
    },
  };
}
