/**
 * Advertised payload schemas (migration 0010): one row per distinct schema of
 * a task in a namespace, whatever the key order of its JSON; re-advertising
 * refreshes it; namespaces do not see each other's; forget() drops the ones
 * not advertised for a while, by the database clock.
 */
import { createTestDatabase, type TestDatabase } from '@kairos/testing';
import { schemaHash, type Store } from './index';

describe('task schemas', () => {
  let db: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    db = await createTestDatabase();
    store = db.createStore();
  });
  afterAll(async () => {
    await db?.drop();
  });

  const v1 = { type: 'object', properties: { a: { type: 'integer' } }, required: ['a'] };
  const v1Reordered = { required: ['a'], properties: { a: { type: 'integer' } }, type: 'object' };
  const v2 = { type: 'object', properties: { b: { type: 'string' } } };

  test('a schema is stored once however its keys are ordered; a new one is added beside it, newest first', async () => {
    expect(schemaHash(v1)).toBe(schemaHash(v1Reordered));
    await store.taskSchemas.advertise('ns', 'agent-1', [{ task: 'invoice', jsonSchema: JSON.stringify(v1) }]);
    await store.taskSchemas.advertise('ns', 'agent-2', [{ task: 'invoice', jsonSchema: JSON.stringify(v1Reordered) }]);
    let rows = await store.taskSchemas.forTask('ns', 'invoice');
    expect(rows.map((row) => [row.agentId, row.jsonSchema])).toEqual([['agent-2', v1]]);
    await store.taskSchemas.advertise('ns', 'agent-3', [{ task: 'invoice', jsonSchema: JSON.stringify(v2) }]);
    rows = await store.taskSchemas.forTask('ns', 'invoice');
    expect(rows.map((row) => row.jsonSchema)).toEqual([v2, v1]);
    expect(await store.taskSchemas.forTask('other', 'invoice')).toEqual([]);
  });

  test('forget drops schemas not advertised within the window, keeps the rest', async () => {
    await store.taskSchemas.advertise('old', 'agent-1', [{ task: 't', jsonSchema: JSON.stringify(v1) }, { task: 'u', jsonSchema: JSON.stringify(v2) }]);
    await db.pool.query(`UPDATE task_schemas SET advertised_at = now() - interval '2 hours' WHERE namespace = 'old' AND task = 't'`);
    expect(await store.taskSchemas.forget(3_600_000)).toBe(1);
    expect(await store.taskSchemas.forTask('old', 't')).toEqual([]);
    expect(await store.taskSchemas.forTask('old', 'u')).toHaveLength(1);
  });
});
