/**
 * The store's only export surface: `createStore(pool)` returns the typed API
 * that the coordinator uses. Tables and SQL stay inside this package.
 */
import { drizzle } from 'drizzle-orm/node-postgres';
import { Client, Pool, type ClientConfig, type PoolConfig } from 'pg';
import { listenForChanges, type ChangeHandlers, type ChangeListener } from './notifications';
import { jobQueries, type JobQueries } from './jobs';
import { leaseStatements, type LeaseStatements } from './lease';
import { migrate, pendingMigrations } from './migrate';
import { storeCall } from './pg-errors';
import { deleteFinishedJobs, deleteOldRuns, type JobSweepBatch, type RetentionBatch } from './retention';
import { runQueries, type RunQueries } from './runs';
import type { RetryPolicy } from './settle';
import { presenceQueries, type PresenceQueries } from './presence';
import { taskSchemaQueries, type TaskSchemaQueries } from './task-schemas';
import { tokenQueries, type TokenQueries } from './tokens';
import { webhookQueries, type WebhookQueries } from './webhooks';

export interface Store {
  readonly jobs: JobQueries;
  readonly runs: RunQueries;
  readonly lease: LeaseStatements;
  readonly tokens: TokenQueries;
  /** Webhooks and their deliveries (webhooks.ts). */
  readonly webhooks: WebhookQueries;
  /** Payload schemas agents advertised for SDK tasks (task-schemas.ts). */
  readonly taskSchemas: TaskSchemaQueries;
  /** Which agents are connected to which coordinator (presence.ts). */
  readonly presence: PresenceQueries;
  /** Retention batches (retention.ts). */
  readonly retention: {
    deleteOldRuns(options: { olderThanMs: number; scan?: number; now?: Date }): Promise<RetentionBatch>;
    deleteFinishedJobs(options: { olderThanMs: number; after?: string | null; scan?: number; now?: Date }): Promise<JobSweepBatch>;
  };
  /** Applies pending migrations; returns the names applied. */
  migrate(): Promise<string[]>;
  /** Migrations not yet applied, read without writing (KAIROS_MIGRATE=false). */
  pendingMigrations(): Promise<string[]>;
  /** True when a trivial query answers (readiness). */
  ping(): Promise<boolean>;
  /** The database's clock now, epoch milliseconds with fractions (clock_timestamp()). */
  clockMs(): Promise<number>;
  /**
   * Calls `onDue` whenever a job may have become due, and `onAbort` whenever a
   * running run was aborted (any coordinator's write), from its own connection.
   */
  listen(handlers: ChangeHandlers, hooks?: { onReconnected?: () => void }): ChangeListener;
  close(): Promise<void>;
}

export interface StoreOptions {
  retry?: RetryPolicy;
}

export function createStore(pool: Pool, options: StoreOptions = {}): Store {
  const connectionString = (pool.options as { connectionString?: string }).connectionString;
  const db = drizzle({ client: pool });
  return {
    jobs: jobQueries(db),
    runs: runQueries(db),
    lease: leaseStatements(pool, options.retry),
    tokens: tokenQueries(db),
    webhooks: webhookQueries(pool),
    taskSchemas: taskSchemaQueries(db),
    presence: presenceQueries(pool),
    retention: {
      deleteOldRuns: (options) => storeCall('retention.deleteOldRuns', () => deleteOldRuns(pool, options)),
      deleteFinishedJobs: (options) => storeCall('retention.deleteFinishedJobs', () => deleteFinishedJobs(pool, options)),
    },
    migrate: () => migrate(pool),
    pendingMigrations: () => pendingMigrations(pool),
    async ping() {
      try {
        await pool.query('SELECT 1');
        return true;
      } catch {
        return false;
      }
    },
    async clockMs() {
      const { rows } = await pool.query('SELECT extract(epoch FROM clock_timestamp())::float8 * 1000 AS ms');
      return Number(rows[0].ms);
    },
    listen(handlers, hooks) {
      if (connectionString === undefined) throw new Error('listen needs a pool made from a connection string');
      return listenForChanges(connectionString, handlers, hooks);
    },
    close: () => pool.end(),
  };
}

/**
 * A pg client that never crashes the process with an unheard 'error' event. A
 * connection can die while its client is checked out but between queries, or
 * after it was released with an error; pg then emits 'error' on the client with
 * no listener attached (found by tools/chaos: PostgreSQL crash-stops killed the
 * coordinator). The failure still reaches the caller through its query.
 */
class ResilientClient extends Client {
  constructor(config?: string | ClientConfig) {
    super(config);
    this.on('error', () => undefined);
  }
}

/** A pool with the settings the store expects (UTC session, bounded waits). */
export function createPool(config: PoolConfig & { connectionString: string }): Pool {
  const pool = new Pool({
    Client: ResilientClient,
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
