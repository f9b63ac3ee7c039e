/**
 * The one PostgreSQL server every system runs on: an embedded cluster the bench
 * starts in its own folder under the OS temp dir, with durability ON (fsync,
 * synchronous_commit, full_page_writes at their defaults) because durable
 * commits are part of what is measured. Each system gets fresh databases on it.
 */
import { mkdtemp, rm, chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Pool } from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '@kairos/store';
import { withClient } from '@kairos/testing';

export interface BenchCluster {
  readonly adminUrl: string;
  urlFor(database: string): string;
  readonly pid: number | undefined;
  readonly dataDir: string;
  /** A small pool on the `postgres` database for admin statements and stats reads. */
  readonly admin: Pool;
  stop(): Promise<void>;
}

/**
 * Server settings, the same for every system. Memory is sized for a machine
 * that holds three million-row databases; checkpoints are spread so that a
 * checkpoint storm does not land inside one system's measurement.
 */
export const SERVER_SETTINGS: Record<string, string> = {
  shared_buffers: '1GB',
  max_wal_size: '8GB',
  checkpoint_timeout: '30min',
  max_connections: '300',
  // Durability stays at PostgreSQL's defaults; written out so the results show it.
  fsync: 'on',
  synchronous_commit: 'on',
  full_page_writes: 'on',
};

export async function startCluster(options: { extraSettings?: Record<string, string>; onLog?: (line: string) => void } = {}): Promise<BenchCluster> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'kairos-bench-pg-'));
  await chmod(dataDir, 0o755);
  let server: EmbeddedPostgres;
  try {
    server = await startEmbeddedPostgres({
      dataDir,
      settings: { ...SERVER_SETTINGS, ...options.extraSettings },
      ...(options.onLog ? { onLog: options.onLog } : {}),
    });
  } catch (error: unknown) {
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
  const admin = new Pool({ connectionString: server.url, max: 3 });
  admin.on('error', () => undefined);
  return {
    adminUrl: server.url,
    urlFor: (database) => server.urlFor(database),
    pid: server.pid,
    dataDir,
    admin,
    async stop() {
      await admin.end().catch(() => undefined);
      await server.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export async function createDatabase(cluster: BenchCluster, name: string, template?: string): Promise<string> {
  await cluster.admin.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`);
  // FILE_COPY clones a seeded template by copying its files (one checkpoint)
  // instead of writing every block through the WAL.
  await cluster.admin.query(
    template ? `CREATE DATABASE ${ident(name)} TEMPLATE ${ident(template)} STRATEGY FILE_COPY` : `CREATE DATABASE ${ident(name)}`,
  );
  return cluster.urlFor(name);
}

export async function dropDatabase(cluster: BenchCluster, name: string): Promise<void> {
  await cluster.admin.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`);
}

export { withClient };

export async function vacuumAnalyze(url: string): Promise<void> {
  await withClient(url, (client) => client.query('VACUUM ANALYZE'));
}

export interface DbCounters {
  xactCommit: number;
  /** WAL fsyncs on the whole server (pg_stat_io, PostgreSQL 16+); null if unavailable. */
  walFsyncs: number | null;
  /** The server's WAL insert position in bytes (pg_current_wal_lsn): the difference of two readings is the WAL written between them, by every database. */
  walBytes: number;
}

/**
 * Counters for one database. Backends publish their statistics when they go
 * idle (at most once a second) and when they exit, so callers read after the
 * measured processes have stopped and a short settle.
 */
/**
 * Waits until no backend is connected to `database` (the seeding pools and a
 * stopped system have gone). A backend flushes its statistics when it exits,
 * so the commit counters read afterwards include all of its work.
 */
export async function waitForBackendsGone(cluster: BenchCluster, database: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await cluster.admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [database]);
    if (rows[0]?.n === 0) return;
    if (Date.now() > deadline) throw new Error(`${rows[0]?.n} backends still connected to ${database} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

export async function readCounters(cluster: BenchCluster, database: string): Promise<DbCounters> {
  const client = await cluster.admin.connect();
  try {
    await client.query('SELECT pg_stat_clear_snapshot()');
    const { rows } = await client.query(
      `SELECT xact_commit::bigint AS c, pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8 AS wal FROM pg_stat_database WHERE datname = $1`,
      [database],
    );
    let walFsyncs: number | null = null;
    try {
      const wal = await client.query(`SELECT coalesce(sum(fsyncs), 0)::bigint AS f FROM pg_stat_io WHERE object = 'wal'`);
      walFsyncs = Number(wal.rows[0]?.f ?? 0);
    } catch {
      walFsyncs = null;
    }
    return { xactCommit: Number(rows[0]?.c ?? 0), walFsyncs, walBytes: Number(rows[0]?.wal ?? 0) };
  } finally {
    client.release();
  }
}

export interface ServerInfo {
  version: string;
  versionNum: number;
  settings: Record<string, string>;
}

export async function serverInfo(cluster: BenchCluster): Promise<ServerInfo> {
  const { rows } = await cluster.admin.query(`SELECT version() AS v, current_setting('server_version_num')::int AS n`);
  const names = ['fsync', 'synchronous_commit', 'full_page_writes', 'wal_sync_method', 'data_checksums', 'wal_level', 'shared_buffers', 'max_wal_size', 'checkpoint_timeout', 'max_connections', 'shared_preload_libraries'];
  const settings: Record<string, string> = {};
  for (const name of names) {
    const r = await cluster.admin.query(`SELECT current_setting($1, true) AS s`, [name]);
    settings[name] = String(r.rows[0]?.s ?? '');
  }
  return { version: String(rows[0]?.v), versionNum: Number(rows[0]?.n), settings };
}

export function ident(name: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`unsafe identifier ${name}`);
  return name;
}
