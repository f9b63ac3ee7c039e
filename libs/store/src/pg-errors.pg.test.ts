import { stdSerializers } from 'pino';
import { createTestDatabase, type TestDatabase } from '@kairos/testing';
import { scrubbed } from './pg-errors';
import type { Store } from './store';

describe('store errors carry no query parameters', () => {
  let db: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    db = await createTestDatabase();
    store = db.createStore();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('a failed insert logs the SQLSTATE and PostgreSQL message, never the payload', async () => {
    const error = await store.jobs
      .create({
        namespace: 'default',
        task: 'sleep',
        runAt: new Date('2030-01-01T00:00:00Z'),
        // PostgreSQL's jsonb refuses \u0000: the statement fails with the payload among its parameters.
        payload: { apiKey: 'TOP-SECRET-VALUE\u0000' },
        maxAttempts: 3,
        misfirePolicy: 'fire-once',
        idempotencyKey: 'KEY-SECRET-VALUE',
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(Error);
    const logged = JSON.stringify(stdSerializers.err(error as Error));
    expect(logged).toContain('jobs.create failed');
    expect(logged).toContain('22P05'); // untranslatable_character
    expect(logged).not.toContain('TOP-SECRET-VALUE');
    expect(logged).not.toContain('KEY-SECRET-VALUE');
    expect(logged).not.toMatch(/insert into/i);
  });

  it('scrubbed keeps the code and drops a query builder’s "Failed query" message', () => {
    const driver = Object.assign(new Error('duplicate key value violates unique constraint "x"'), {
      code: '23505',
      detail: 'Key (idempotency_key)=(secret) already exists.',
      constraint: 'x',
    });
    const wrapper = new Error('Failed query: insert into jobs values ($1)\nparams: secret', { cause: driver });
    const result = scrubbed(wrapper);
    expect(result.message).toBe('duplicate key value violates unique constraint "x" (23505)');
    expect(result).toMatchObject({ code: '23505', constraint: 'x' });
    expect(JSON.stringify(stdSerializers.err(result))).not.toContain('secret');
    expect(scrubbed(new Error('Failed query: select $1 params: secret')).message).not.toContain('secret');
  });
});
