/**
 * The store's only export surface: `createStore(pool)` returns the typed API
 * that the coordinator uses. Tables and SQL stay inside this package.
 */
import { drizzle } from 'drizzle-orm/node-postgres';
import { Pool, type PoolConfig } from 'pg';
import { jobQueries, type JobQueries } from './jobs';
import { leaseStatements, type LeaseStatements } from './lease';
import { migrate } from './migrate';
import { runQueries, type RunQueries } from './runs';
import type { RetryPolicy } from './settle';

export interface Store {
  readonly jobs: JobQueries;
  readonly runs: RunQueries;
  readonly lease: LeaseStatements;
  /** Applies pending migrations; returns the names applied. */
  migrate(): Promise<string[]>;
  /** True when a trivial query answers (readiness). */
  ping(): Promise<boolean>;
  readonly pool: Pool;
  close(): Promise<void>;
}

export interface StoreOptions {
  retry?: RetryPolicy;
}

export function createStore(pool: Pool, options: StoreOptions = {}): Store {
  const db = drizzle({ client: pool });
  return {
    jobs: jobQueries(db),
    runs: runQueries(db),
    lease: leaseStatements(pool, options.retry),
    migrate: () => migrate(pool),
    async ping() {
      try {
        await pool.query('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    pool,
    close: () => pool.end(),
  };
}

/** A pool with the settings the store expects (UTC session, bounded waits). */
export function createPool(config: PoolConfig & { connectionString: string }): Pool {
  const pool = new Pool({
    max: 10,
    connectionTimeoutMillis: 5_000,
    idleTimeoutMillis: 30_000,
    application_name: 'kairos',
    ...config,
    options: '-c TimeZone=UTC',
  });
  // An idle client losing its connection (database restart) must not crash the process;
  // the next query reports the error to its caller instead.
  pool.on('error', () => undefined);
  return pool;
}
