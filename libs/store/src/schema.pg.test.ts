import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { getTableColumns } from 'drizzle-orm';
import { getTableConfig, getViewConfig } from 'drizzle-orm/pg-core';
import { createTestDatabase, type TestDatabase } from '@kairos/testing';
import { dumpSchema } from './schema-dump';
import { endedRuns, jobs, runs, tokens } from './schema';

describe('schema', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('matches the committed dump (run `npm run dump:schema` after adding a migration)', async () => {
    const committed = await readFile(path.join(__dirname, '..', 'schema.sql'), 'utf8');
    expect(await dumpSchema(db.pool)).toBe(committed);
  });

  it.each([jobs, endedRuns, tokens])('drizzle table %# names exactly the migrated columns', async (table) => {
    const { name } = getTableConfig(table);
    const { rows } = await db.pool.query(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1`,
      [name],
    );
    const migrated = rows.map((r) => r.column_name).sort();
    const declared = Object.values(getTableColumns(table))
      .map((c) => c.name)
      .sort();
    expect(declared).toEqual(migrated);
  });

  it('drizzle view runs names exactly the migrated columns', async () => {
    const { rows } = await db.pool.query(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'runs'`,
    );
    const declared = Object.values(getViewConfig(runs).selectedFields)
      .map((field) => (field as { name: string }).name)
      .sort();
    expect(declared).toEqual(rows.map((r) => r.column_name).sort());
  });
});
