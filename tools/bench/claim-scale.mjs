#!/usr/bin/env node
// W6: how a 500-row claim scales with the number of future jobs.
// Seeds 10,000 then 1,000,000 future jobs plus 500 due ones, and times the real
// claim statement (rolled back each round, so every round claims the same rows).
// Usage: node tools/bench/claim-scale.mjs [--rounds 30]   (after `npm run build`)
import { mkdtemp, rm, chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import store from '../../libs/store/dist/index.js';

const rounds = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 30;
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'kairos-claim-'));
await chmod(dataDir, 0o755);
const server = await store.startEmbeddedPostgres({ dataDir });
const pool = store.createPool({ connectionString: server.url, max: 2 });
const results = {};
try {
  await store.migrate(pool);
  const lease = store.createStore(pool).lease;
  const now = new Date('2030-01-01T00:00:00Z');
  const seed = (count, from, spreadMs) =>
    pool.query(
      `INSERT INTO jobs (id, task, run_at, occurrence_at, next_run_at, state)
       SELECT gen_random_uuid(), 'noop', t, t, t, 'DUE'
       FROM (SELECT $2::timestamptz + make_interval(secs => (g % $3::bigint) / 1000.0) AS t
             FROM generate_series(1, $1) g) s`,
      [count, from, spreadMs],
    );
  await seed(500, new Date(now.getTime() - 1000), 1);
  for (const [label, target] of [['at10k', 10_000], ['at1m', 1_000_000]]) {
    const { rows } = await pool.query(`SELECT count(*)::int AS n FROM jobs`);
    const t0 = performance.now();
    await seed(target - (rows[0].n - 500), new Date(now.getTime() + 60_000), 30 * 86_400_000);
    await pool.query('VACUUM ANALYZE jobs');
    const seedMs = performance.now() - t0;
    const timings = [];
    for (let i = 0; i < rounds; i++) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const t = performance.now();
        const { rows: claimed } = await client.query(
          // The same statement lease.claimDue runs, inside a transaction we roll back.
          store.CLAIM_SQL,
          [now, ['noop'], 500, 'bench', 10_000, 60_000, 'default', null],
        );
        timings.push(performance.now() - t);
        if (claimed.length !== 500) throw new Error(`claimed ${claimed.length}, expected 500`);
      } finally {
        await client.query('ROLLBACK');
        client.release();
      }
    }
    timings.sort((a, b) => a - b);
    results[label] = { medianMs: +timings[Math.floor(rounds / 2)].toFixed(2), p90Ms: +timings[Math.floor(rounds * 0.9)].toFixed(2), seedMs: Math.round(seedMs) };
    void lease;
  }
  console.log(JSON.stringify({ claim500: results, ratio: +(results.at1m.medianMs / results.at10k.medianMs).toFixed(2) }, null, 2));
} finally {
  await pool.end();
  await server.stop();
  await rm(dataDir, { recursive: true, force: true });
}
