#!/usr/bin/env node
// Writes libs/store/schema.sql: migrate a scratch embedded PostgreSQL, dump its catalog.
// Usage: npm run dump:schema  (after `npm run build`)
import { mkdtemp, rm, writeFile, chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import store from '../../libs/store/dist/index.js';
import dump from '../../libs/store/dist/schema-dump.js';
import pg from 'pg';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'kairos-dump-'));
await chmod(dataDir, 0o755);
const server = await store.startEmbeddedPostgres({ dataDir });
try {
  const pool = new pg.Pool({ connectionString: server.url, max: 1 });
  await store.migrate(pool);
  const text = await dump.dumpSchema(pool);
  await pool.end();
  await writeFile(path.join(root, 'libs/store/schema.sql'), text);
  console.log('wrote libs/store/schema.sql');
} finally {
  await server.stop();
  await rm(dataDir, { recursive: true, force: true });
}
