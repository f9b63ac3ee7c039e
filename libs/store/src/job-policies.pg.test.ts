/**
 * Per-job retry policy, start jitter and pause on failure, at the store: what
 * a settlement writes for each, with time pinned.
 */
import { createTestDatabase, insertJob, at, jobRow, FIXTURE_HOLDER, type TestDatabase } from '@kairos/testing';
import { parseCron, stableFraction } from '@kairos/schedule';
import { retryDelayMs, startOf } from './settle';
import type { Store } from './store';

const T0 = new Date('2030-01-01T00:00:00.000Z');

describe('per-job retry, start jitter and pause on failure', () => {
  let db: TestDatabase;
  let store: Store;

  beforeAll(async () => {
    db = await createTestDatabase();
    store = db.createStore({ retry: { backoffBaseMs: 1000, backoffCapMs: 60_000 } });
  });
  afterAll(async () => {
    await db.drop();
  });
  beforeEach(async () => {
    await db.truncate();
  });

  async function setPolicy(id: string, columns: Record<string, unknown>) {
    const names = Object.keys(columns);
    await db.pool.query(`UPDATE jobs SET ${names.map((n, i) => `${n} = $${i + 2}`).join(', ')} WHERE id = $1`, [id, ...Object.values(columns)]);
  }
  const fail = (id: string, generation: number, now: Date) =>
    store.lease.complete([{ ...FIXTURE_HOLDER, jobId: id, leaseGeneration: generation, outcome: 'FAILED', error: 'boom' }], now);

  it("retries on the job's own policy: initial interval, multiplier and cap", async () => {
    const id = await insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 1, attempt: 1, maxAttempts: 5, runAt: T0, leaseUntil: at(T0, 10_000) });
    await setPolicy(id, { retry_initial_ms: 200, retry_multiplier: 3, retry_max_ms: 1000 });
    await fail(id, 1, T0);
    expect((await jobRow(db.pool, id)).next_run_at).toEqual(at(T0, 200));
    // Attempts 2 and 3: 600 ms, then 1800 capped at 1000.
    for (const [attempt, delay] of [
      [2, 600],
      [3, 1000],
    ] as const) {
      await db.pool.query(
        `UPDATE jobs SET state = 'CLAIMED', lease_generation = $2, attempt = $3, lease_owner = 'agent-fixture', lease_until = $4,
           run_id = nextval('ended_runs_id_seq'), run_started_at = $5 WHERE id = $1`,
        [id, attempt, attempt, at(T0, 10_000), T0],
      );
      await fail(id, attempt, T0);
      expect((await jobRow(db.pool, id)).next_run_at).toEqual(at(T0, delay));
    }
  });

  it('jitters retries deterministically within the jitter fraction; defaults apply to unset fields', async () => {
    const ids = await Promise.all(
      Array.from({ length: 12 }, () => insertJob(db.pool, { state: 'CLAIMED', leaseGeneration: 1, attempt: 1, runAt: T0, leaseUntil: at(T0, 10_000) })),
    );
    for (const id of ids) await setPolicy(id, { retry_jitter: 0.5 });
    await store.lease.complete(ids.map((id) => ({ ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 1, outcome: 'FAILED' as const })), T0);
    const delays = await Promise.all(ids.map(async (id) => (await jobRow(db.pool, id)).next_run_at.getTime() - T0.getTime()));
    for (const [i, delay] of delays.entries()) {
      // The coordinator's base (1000 ms) with up to half taken off, the same as the pure function says.
      expect(delay).toBeGreaterThanOrEqual(500);
      expect(delay).toBeLessThanOrEqual(1000);
      const expected = retryDelayMs({ id: ids[i]!, attempt: 1, occurrenceAt: T0, retry: { initialMs: null, maxMs: null, multiplier: null, jitter: 0.5 } }, { backoffBaseMs: 1000 });
      expect(delay).toBe(expected);
    }
    expect(new Set(delays).size).toBeGreaterThan(6);
  });

  it('starts each occurrence of a jittered recurring job late by a fixed fraction; runs keep the true occurrence', async () => {
    const cron = parseCron('0 * * * *');
    const created = await store.jobs.create({ namespace: 'default', task: 'noop', cron, payload: {}, maxAttempts: 3, misfirePolicy: 'fire-once', startJitterMs: 600_000 }, T0);
    expect(created.kind).toBe('created');
    const id = created.kind === 'created' ? created.job.id : '';
    // A job created exactly on an occurrence serves it.
    const first = T0;
    const row = await jobRow(db.pool, id);
    expect(row.occurrence_at).toEqual(first);
    expect(row.next_run_at).toEqual(startOf(id, first, 600_000));
    expect(row.next_run_at.getTime() - first.getTime()).toBe(Math.floor(stableFraction(id, first.getTime(), 'start') * 600_000));
    const [claimed] = await store.lease.claimDue({ owner: 'agent-fixture', tokenId: null, namespace: 'default', tasks: ['noop'], limit: 1, leaseMs: 10_000, now: row.next_run_at });
    expect(claimed!.scheduledForMs).toBe(first.getTime());
    await store.lease.complete([{ ...FIXTURE_HOLDER, jobId: id, leaseGeneration: 1, outcome: 'SUCCEEDED' }], row.next_run_at);
    const second = at(T0, 3_600_000);
    const after = await jobRow(db.pool, id);
    expect(after.occurrence_at).toEqual(second);
    expect(after.next_run_at).toEqual(startOf(id, second, 600_000));
    expect(after.next_run_at.getTime()).toBeGreaterThanOrEqual(second.getTime());
    expect(after.next_run_at.getTime()).toBeLessThan(second.getTime() + 600_000);
  });

  it('pauses a recurring job whose occurrence exhausts its attempts, with the reason; resume clears it', async () => {
    const id = await insertJob(db.pool, {
      state: 'CLAIMED',
      schedule: '*/5 * * * *',
      occurrenceAt: T0,
      nextRunAt: T0,
      leaseGeneration: 3,
      attempt: 3,
      maxAttempts: 3,
      leaseUntil: at(T0, 10_000),
    });
    await setPolicy(id, { pause_on_failure: true });
    const [result] = await fail(id, 3, at(T0, 1000));
    expect(result).toMatchObject({ kind: 'recorded', state: 'PAUSED' });
    const paused = await jobRow(db.pool, id);
    expect(paused).toMatchObject({ state: 'PAUSED', attempt: 0 });
    expect(paused.paused_reason).toBe(`paused on failure: occurrence ${T0.toISOString()} ended FAILED after 3 of 3 attempts`);
    // It moved past the failed occurrence: resuming does not run it again.
    expect(paused.occurrence_at).toEqual(at(T0, 300_000));
    expect(await store.lease.resume('default', id, at(T0, 2000))).toEqual({ kind: 'done', jobId: id });
    expect(await jobRow(db.pool, id)).toMatchObject({ state: 'DUE', paused_reason: null });
  });

  it('without pauseOnFailure a failed occurrence moves on as before, and attempts left still retry', async () => {
    const moving = await insertJob(db.pool, { state: 'CLAIMED', schedule: '*/5 * * * *', occurrenceAt: T0, nextRunAt: T0, leaseGeneration: 1, attempt: 3, maxAttempts: 3, leaseUntil: at(T0, 10_000) });
    const retrying = await insertJob(db.pool, { state: 'CLAIMED', schedule: '*/5 * * * *', occurrenceAt: T0, nextRunAt: T0, leaseGeneration: 1, attempt: 1, maxAttempts: 3, leaseUntil: at(T0, 10_000) });
    await setPolicy(retrying, { pause_on_failure: true });
    await fail(moving, 1, T0);
    await fail(retrying, 1, T0);
    expect(await jobRow(db.pool, moving)).toMatchObject({ state: 'DUE', paused_reason: null });
    expect(await jobRow(db.pool, retrying)).toMatchObject({ state: 'DUE', occurrence_at: T0, paused_reason: null });
  });
});
