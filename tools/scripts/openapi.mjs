#!/usr/bin/env node
// Writes docs/openapi.json from the coordinator's zod schemas (apps/coordinator/src/api/openapi.ts,
// built to dist first: `npm run build`), or with --check fails when the committed file is stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const target = path.join(root, 'docs/openapi.json');
const { openApiDocument } = createRequire(import.meta.url)(path.join(root, 'apps/coordinator/dist/api/openapi.js'));
const fresh = `${JSON.stringify(openApiDocument(), null, 2)}\n`;

if (process.argv.includes('--check')) {
  let committed = '';
  try {
    committed = readFileSync(target, 'utf8');
  } catch {
    // missing: stale
  }
  if (committed !== fresh) {
    console.error('docs/openapi.json is stale: the REST schemas changed. Run `npm run build && npm run generate:openapi` and commit it.');
    process.exit(1);
  }
  console.log('docs/openapi.json is up to date');
} else {
  writeFileSync(target, fresh);
  console.log('wrote docs/openapi.json');
}
