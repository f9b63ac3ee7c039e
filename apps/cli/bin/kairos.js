#!/usr/bin/env node
// The `kairos` command: loads the compiled CLI. `npm ci` compiles it (the root
// `prepare` script); after editing the sources, run `npm run build`.
'use strict';

const path = require('node:path');
const fs = require('node:fs');

const entry = path.join(__dirname, '..', 'dist', 'main.js');
if (!fs.existsSync(entry)) {
  process.stderr.write(
    `kairos: the CLI is not built (${path.relative(process.cwd(), entry) || entry} is missing).\n` +
      'Run `npm run build` at the repository root, then try again.\n',
  );
  process.exit(1);
}
require(entry);
