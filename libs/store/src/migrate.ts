/**
 * Applies the numbered SQL files in ../migrations, forward only, each in its own
 * transaction, recording them in `kairos_migrations`. A transaction-level advisory
 * lock serialises coordinators that start together against one database: the
 * second waits, then finds nothing left to do.
 *
 * Format (settled in docs/decisions/0002-migrations.md): `NNNN_name.sql`, plain
 * SQL, never edited once released. `libs/store/schema.sql` is the committed dump
 * of a migrated database that CI compares against.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Pool } from 'pg';

/** Arbitrary constant naming Kairos's migration lock among advisory locks. */
const MIGRATION_LOCK_KEY = 0x6b6169726f73; // "kairos"

export const MIGRATIONS_DIR = path.join(__dirname, '..', 'migrations');

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export async function loadMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((file) => /^\d{4}_[a-z0-9_]+\.sql$/.test(file)).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const version = Number(file.slice(0, 4));
    if (migrations.some((m) => m.version === version)) throw new Error(`two migrations share version ${version}`);
    migrations.push({ version, name: file.replace(/\.sql$/, ''), sql: await readFile(path.join(dir, file), 'utf8') });
  }
  return migrations;
}

/** Applies pending migrations; returns the names applied (empty when up to date). */
export async function migrate(pool: Pool, dir: string = MIGRATIONS_DIR): Promise<string[]> {
  const migrations = await loadMigrations(dir);
  const client = await pool.connect();
  // The connection may die between two statements (database restarting): the
  // next query reports it; an unheard 'error' event would crash the process.
  const ignore = (): void => undefined;
  client.on('error', ignore);
  const applied: string[] = [];
  try {
    await client.query(`CREATE TABLE IF NOT EXISTS kairos_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    for (const migration of migrations) {
      await client.query('BEGIN');
      try {
        await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
        const done = await client.query('SELECT 1 FROM kairos_migrations WHERE version = $1', [migration.version]);
        if (done.rowCount === 0) {
          await client.query(migration.sql);
          await client.query('INSERT INTO kairos_migrations (version, name) VALUES ($1, $2)', [
            migration.version,
            migration.name,
          ]);
          applied.push(migration.name);
        }
        await client.query('COMMIT');
      } catch (cause: unknown) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw new Error(`migration ${migration.name} failed`, { cause });
      }
    }
    return applied;
  } finally {
    client.removeListener('error', ignore);
    client.release();
  }
}

/**
 * The migrations not yet applied (all of them on an empty database), read
 * without taking the lock or writing anything: what a coordinator that may
 * not run DDL (KAIROS_MIGRATE=false) waits on.
 */
export async function pendingMigrations(pool: Pool, dir: string = MIGRATIONS_DIR): Promise<string[]> {
  const migrations = await loadMigrations(dir);
  const { rows: table } = await pool.query<{ exists: boolean }>(`SELECT to_regclass('kairos_migrations') IS NOT NULL AS exists`);
  const applied = new Set<number>();
  if (table[0]?.exists) {
    const { rows } = await pool.query<{ version: number }>('SELECT version FROM kairos_migrations');
    for (const row of rows) applied.add(row.version);
  }
  return migrations.filter((migration) => !applied.has(migration.version)).map((migration) => migration.name);
}
