/**
 * One database per test file, cloned from the migrated template that globalSetup
 * prepared. Cloning takes tens of milliseconds; migrating would take longer and
 * would make every file depend on migration speed.
 */
import { randomBytes } from 'node:crypto';
import { Pool } from 'pg';
import { createPool, createStore, type Store, type StoreOptions } from '@kairos/store';
import { ENV_ADMIN_URL, ENV_TEMPLATE_DB, withClient, withDatabase } from './cluster';

export interface TestDatabase {
  readonly name: string;
  readonly url: string;
  /** A pool for direct SQL in assertions and factories. */
  readonly pool: Pool;
  /** A store over its own pool (so tests can close it independently). */
  createStore(options?: StoreOptions & { maxConnections?: number }): Store;
  /** Empties jobs and runs (isolation between tests of one file). */
  truncate(): Promise<void>;
  drop(): Promise<void>;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = process.env[ENV_ADMIN_URL];
  const template = process.env[ENV_TEMPLATE_DB];
  if (!adminUrl || !template) {
    throw new Error(`${ENV_ADMIN_URL}/${ENV_TEMPLATE_DB} unset: run tests through the root jest config (globalSetup)`);
  }
  const worker = process.env.JEST_WORKER_ID ?? '0';
  const name = `kairos_t_${template.replace('kairos_tpl_', '')}_${worker}_${randomBytes(4).toString('hex')}`;
  await cloneTemplate(adminUrl, template, name);
  const url = withDatabase(adminUrl, name);
  const pool = createPool({ connectionString: url, max: 4 });
  const stores: Store[] = [];
  return {
    name,
    url,
    pool,
    createStore(options = {}) {
      const store = createStore(createPool({ connectionString: url, max: options.maxConnections ?? 8 }), options);
      stores.push(store);
      return store;
    },
    async truncate() {
      await pool.query('TRUNCATE jobs, ended_runs, tokens');
    },
    async drop() {
      await Promise.all(stores.map((store) => store.close().catch(() => undefined)));
      await pool.end();
      await withClient(adminUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

async function cloneTemplate(adminUrl: string, template: string, name: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await withClient(adminUrl, (client) => client.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
      return;
    } catch (error: unknown) {
      // "source database is being accessed by other users": another clone is starting; retry briefly.
      const code = (error as { code?: string }).code;
      if (code !== '55006' || attempt >= 50) throw new Error(`could not clone ${template} into ${name}`, { cause: error });
      await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
    }
  }
}
