/**
 * jobs.createMany: a batch is one transaction that answers each input as a
 * lone create would — created, an idempotent repeat (existing) or a key
 * reused for another request (conflict) — in the order given, including keys
 * repeated within the batch; and it finds taken keys through the unique index.
 */
import { parseCron } from '@kairos/schedule';
import { createTestDatabase, type TestDatabase } from '@kairos/testing';
import { MAX_CREATE_BATCH, type NewJob, type Store } from './index';

describe('jobs.createMany', () => {
  let db: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    db = await createTestDatabase();
    store = db.createStore();
  });
  afterAll(async () => {
    await db?.drop();
  });

  const oneOff = (namespace: string, extra: Partial<NewJob> = {}): NewJob => ({
    namespace,
    task: 'noop',
    runAt: new Date('2030-01-01T00:00:00Z'),
    payload: {},
    maxAttempts: 3,
    misfirePolicy: 'fire-once',
    ...extra,
  });

  test('creates every job in order, one-off and recurring, with one clock', async () => {
    const cron = parseCron('0 9 * * *', 'Europe/Berlin');
    const results = await store.jobs.createMany([
      oneOff('a', { name: 'first' }),
      { ...oneOff('a', { name: 'second' }), runAt: null, cron },
      oneOff('a', { name: 'third', payload: { n: 3 } }),
    ]);
    expect(results.map((r) => r.kind)).toEqual(['created', 'created', 'created']);
    const jobs = await Promise.all(results.map((r) => store.jobs.get('a', r.jobId)));
    expect(jobs.map((job) => job?.name)).toEqual(['first', 'second', 'third']);
    expect(jobs[0]).toMatchObject({ state: 'DUE', runAt: new Date('2030-01-01T00:00:00Z'), nextRunAt: new Date('2030-01-01T00:00:00Z'), attempt: 0, version: 1 });
    expect(jobs[1]).toMatchObject({ schedule: '0 9 * * *', timezone: 'Europe/Berlin', runAt: null, misfirePolicy: 'fire-once', overlapPolicy: 'skip' });
    // 09:00 in Berlin is 07:00 or 08:00 UTC, by season.
    expect([7, 8]).toContain(jobs[1]?.nextRunAt?.getUTCHours());
    expect(jobs[1]?.nextRunAt?.getUTCMinutes()).toBe(0);
    expect(jobs[2]?.payload).toEqual({ n: 3 });
    expect(new Set(jobs.map((job) => job?.createdAt.getTime())).size).toBe(1);
  });

  test('every field a create stores is stored the same way by a batch', async () => {
    const cron = parseCron('*/5 * * * *', 'America/New_York');
    const input: NewJob = {
      namespace: 'same',
      name: 'quote " and \\ backslash, {brace}',
      task: 'http',
      cron,
      payload: { url: 'http://x', nested: { list: [1, 'two', null], text: 'a "quoted", {odd} value' } },
      maxAttempts: 7,
      timeoutMs: 30_000,
      misfirePolicy: 'catch-up',
      idempotencyKey: null,
      retry: { initialMs: 500, maxMs: 60_000, multiplier: 1.5, jitter: 0.25 },
      startJitterMs: 1234,
      pauseOnFailure: true,
      overlapPolicy: 'buffer-all',
      catchupWindowMs: 86_400_000,
    };
    const clock = new Date('2031-03-04T05:06:07.089Z');
    const single = await store.jobs.create(input, clock);
    const [batched] = await store.jobs.createMany([input], clock);
    if (single.kind !== 'created' || batched?.kind !== 'created') throw new Error('expected created');
    const fromBatch = await store.jobs.get('same', batched.jobId);
    const ignore = { id: undefined, nextRunAt: undefined };
    expect({ ...fromBatch, ...ignore }).toEqual({ ...single.job, ...ignore });
    // The start jitter is fixed per job id: both start within the jitter of the same occurrence.
    expect(fromBatch!.occurrenceAt).toEqual(single.job.occurrenceAt);
    expect(fromBatch!.nextRunAt!.getTime() - fromBatch!.occurrenceAt!.getTime()).toBeLessThan(1234);
  });

  test('idempotency keys: a repeat returns the first job, another request under the key is a conflict, within a batch too', async () => {
    const [first] = await store.jobs.createMany([oneOff('k', { idempotencyKey: 'x', requestDigest: 'd1' })]);
    if (first?.kind !== 'created') throw new Error('expected created');
    const results = await store.jobs.createMany([
      oneOff('k', { idempotencyKey: 'x', requestDigest: 'd1' }), // repeat of the earlier batch
      oneOff('k', { idempotencyKey: 'x', requestDigest: 'other' }), // same key, other request
      oneOff('k', { idempotencyKey: 'y', requestDigest: 'd2' }), // new
      oneOff('k', { idempotencyKey: 'y', requestDigest: 'd2' }), // repeat of the item before it
      oneOff('k', { idempotencyKey: 'y', requestDigest: 'd3' }), // conflict with the item before it
      oneOff('other-namespace', { idempotencyKey: 'x', requestDigest: 'd9' }), // keys are per namespace
    ]);
    expect(results.map((r) => r.kind)).toEqual(['existing', 'conflict', 'created', 'existing', 'conflict', 'created']);
    expect(results[0]).toEqual({ kind: 'existing', jobId: first.jobId });
    expect(results[1]).toEqual({ kind: 'conflict', jobId: first.jobId });
    const y = results[2]!.jobId;
    expect(results[3]).toEqual({ kind: 'existing', jobId: y });
    expect(results[4]).toEqual({ kind: 'conflict', jobId: y });
    // A single create sees the batch's keys the same way.
    expect(await store.jobs.create(oneOff('k', { idempotencyKey: 'y', requestDigest: 'd2' }))).toMatchObject({ kind: 'existing', job: { id: y } });
    const count = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE namespace IN ('k', 'other-namespace')`);
    expect(count.rows[0].n).toBe(3);
  });

  test('a full batch is one statement: all rows or none', async () => {
    const batch = Array.from({ length: MAX_CREATE_BATCH }, (_, i) => oneOff('full', { name: `job-${i}` }));
    const results = await store.jobs.createMany(batch);
    expect(results.filter((r) => r.kind === 'created')).toHaveLength(MAX_CREATE_BATCH);
    await expect(store.jobs.createMany([...batch, oneOff('full')])).rejects.toThrow(/at most 1000/);
    // A row the database refuses (max_attempts below its check) fails the whole call and stores nothing.
    const before = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE namespace = 'atomic'`);
    const bad = { ...oneOff('atomic'), maxAttempts: -1 };
    await expect(store.jobs.createMany([oneOff('atomic'), bad])).rejects.toThrow();
    const after = await db.pool.query(`SELECT count(*)::int AS n FROM jobs WHERE namespace = 'atomic'`);
    expect(after.rows[0].n).toBe(before.rows[0].n);
  });

  test('taken keys are looked up through the idempotency index', async () => {
    // With sequential scans priced out, the plan shows whether the partial unique index can answer the lookup at all.
    const client = await db.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SET LOCAL enable_seqscan = off');
      const plan = await client.query(
        `EXPLAIN (FORMAT JSON) SELECT * FROM jobs WHERE namespace = 'k' AND idempotency_key = ANY($1::text[])`,
        [['x', 'y']],
      );
      const text = JSON.stringify(plan.rows[0]);
      expect(text).toMatch(/"Index Name":"[a-z_]*idempotency[a-z_]*"/);
      expect(text).not.toMatch(/"Seq Scan"/);
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });
});
