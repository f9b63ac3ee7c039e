/**
 * Coordinator presence (migration 0012): published by the statement that
 * publishes agent presence, so a coordinator with no agent is seen too, with
 * its count; withdrawn with its agents; gone from the list once stale.
 */
import { createTestDatabase, type TestDatabase } from '@kairos/testing';
import type { Store } from './store';

describe('coordinator presence', () => {
  let db: TestDatabase;
  let store: Store;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = db.createStore();
  });
  afterAll(async () => {
    await db?.drop();
  });

  const agent = (agentId: string) => ({ namespace: 'default', agentId, view: {} });

  test('every publishing coordinator is listed with its count of agents, even none', async () => {
    await store.presence.publish('c1', [agent('a1'), agent('a2')], { freshForMs: 60_000, forgetAfterMs: 600_000 });
    await store.presence.publish('c2', [], { freshForMs: 60_000, forgetAfterMs: 600_000 });
    expect(await store.presence.coordinators()).toEqual([
      { coordinatorId: 'c1', agents: 2 },
      { coordinatorId: 'c2', agents: 0 },
    ]);
    // An agent that moved is counted where it was published last.
    await store.presence.publish('c2', [agent('a2')], { freshForMs: 60_000, forgetAfterMs: 600_000 });
    await store.presence.publish('c1', [agent('a1')], { freshForMs: 60_000, forgetAfterMs: 600_000 });
    expect(await store.presence.coordinators()).toEqual([
      { coordinatorId: 'c1', agents: 1 },
      { coordinatorId: 'c2', agents: 1 },
    ]);
  });

  test('a coordinator that withdraws goes at once; one that stops publishing drops out when stale, and is forgotten later', async () => {
    await store.presence.withdraw('c2');
    expect((await store.presence.coordinators()).map((row) => row.coordinatorId)).toEqual(['c1']);
    expect((await store.presence.list()).map((row) => row.agentId)).toEqual(['a1']);
    // c3's publication is stale at once (fresh for 0 ms), and forgotten by the next writer after 0 ms more.
    await store.presence.publish('c3', [], { freshForMs: 0, forgetAfterMs: 0 });
    expect((await store.presence.coordinators()).map((row) => row.coordinatorId)).toEqual(['c1']);
    await store.presence.publish('c1', [agent('a1')], { freshForMs: 60_000, forgetAfterMs: 0 });
    expect((await db.pool.query('SELECT coordinator_id FROM coordinator_presence ORDER BY 1')).rows.map((row) => row.coordinator_id)).toEqual(['c1']);
  });
});
