/**
 * The test run's PostgreSQL: the server in DATABASE_URL, or one embedded cluster
 * started for the run. A template database is migrated once; every test file
 * clones its own database from it (`createTestDatabase`), so files running in
 * parallel never see each other's rows.
 *
 * Used from jest's globalSetup/globalTeardown (plain Node, outside the test VM)
 * and by tools that need a private server.
 */
import { mkdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Pool } from 'pg';
import { migrate, startEmbeddedPostgres, type EmbeddedPostgres } from '@kairos/store';

/** Environment variables through which globalSetup tells test workers where the server is. */
export const ENV_ADMIN_URL = 'KAIROS_TEST_ADMIN_URL';
export const ENV_TEMPLATE_DB = 'KAIROS_TEST_TEMPLATE_DB';

export interface TestCluster {
  adminUrl: string;
  templateDb: string;
  /** Set when this run started its own server. */
  embedded?: EmbeddedPostgres;
  dataDir?: string;
}

export async function startTestCluster(): Promise<TestCluster> {
  const templateDb = `kairos_tpl_${process.pid}`;
  let adminUrl = process.env.DATABASE_URL;
  let embedded: EmbeddedPostgres | undefined;
  let dataDir: string | undefined;
  if (!adminUrl) {
    dataDir = path.join(os.tmpdir(), `kairos-test-pg-${process.pid}`);
    await rm(dataDir, { recursive: true, force: true });
    await mkdir(dataDir, { recursive: true, mode: 0o755 });
    // Throwaway cluster: durability off makes each commit cheap; the tests do not crash it.
    embedded = await startEmbeddedPostgres({
      dataDir,
      settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' },
    });
    adminUrl = embedded.url;
  }
  await withClient(adminUrl, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${templateDb} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${templateDb}`);
  });
  const pool = new Pool({ connectionString: withDatabase(adminUrl, templateDb), max: 1 });
  try {
    await migrate(pool);
  } finally {
    await pool.end();
  }
  return { adminUrl, templateDb, ...(embedded ? { embedded } : {}), ...(dataDir ? { dataDir } : {}) };
}

export async function stopTestCluster(cluster: TestCluster): Promise<void> {
  if (cluster.embedded) {
    await cluster.embedded.stop();
    if (cluster.dataDir) await rm(cluster.dataDir, { recursive: true, force: true });
    return;
  }
  // A shared server: drop what this run created.
  await withClient(cluster.adminUrl, async (client) => {
    const { rows } = await client.query(
      `SELECT datname FROM pg_database WHERE datname = $1 OR datname LIKE $2`,
      [cluster.templateDb, `kairos_t_${process.pid}_%`],
    );
    for (const row of rows) await client.query(`DROP DATABASE IF EXISTS ${row.datname} WITH (FORCE)`);
  });
}

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

export async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await work(client);
  } finally {
    // The server may already have ended the connection (a forced DROP DATABASE).
    await client.end().catch(() => undefined);
  }
}
