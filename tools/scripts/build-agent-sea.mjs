#!/usr/bin/env node
// Builds the agent as one Linux executable (a Node.js single executable
// application): the agent and its runtime dependencies bundled into one
// script (esbuild), the session thread's bundle stored beside it as an asset,
// both injected into a copy of a Node.js binary. Nothing else is needed on the
// machine that runs it: no Node, no npm, no node_modules.
//   node tools/scripts/build-agent-sea.mjs [--node <node binary>] [--out <dir>]
// The Node binary must be 25.5 or newer (it has `--build-sea`); the default is
// the one running this script. It is the Node inside the executable: use the
// current LTS (CI uses .tmp/node-lts, made by tools/scripts/client-env.mjs).
// Run after `npm run build`. Prints the executable's path.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const argument = (name, fallback) => {
  const index = process.argv.indexOf(name);
  return index > 0 ? process.argv[index + 1] : fallback;
};
const node = path.resolve(argument('--node', process.execPath));
const out = path.resolve(argument('--out', path.join(root, '.tmp/dist')));
const executable = path.join(out, 'kairos-agent');
// Must match SEA_WORKER_ASSET in apps/agent/src/session/session-thread.ts.
const WORKER_ASSET = 'session-worker.js';

const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
const [major, minor] = version.replace(/^v/, '').split('.').map(Number);
if (!(major > 25 || (major === 25 && minor >= 5))) {
  console.error(`build-agent-sea: ${node} is Node ${version || '(unknown)'}; --build-sea needs 25.5 or newer (pass --node <path>)`);
  process.exit(2);
}

const stage = mkdtempSync(path.join(os.tmpdir(), 'kairos-agent-sea-'));
try {
  const entry = path.join(stage, 'entry.cjs');
  // The agent's main.js starts only when it is the process's main module, which a bundled module never is.
  writeFileSync(
    entry,
    `const { runAgentProcess } = require(${JSON.stringify(path.join(root, 'apps/agent/dist/main.js'))});
runAgentProcess().catch((error) => {
  console.error(error);
  process.exit(1);
});
`,
  );
  const common = { bundle: true, platform: 'node', format: 'cjs', target: `node${major}`, legalComments: 'none', logLevel: 'warning' };
  await build({ ...common, entryPoints: [entry], outfile: path.join(stage, 'agent.cjs') });
  await build({ ...common, entryPoints: [path.join(root, 'apps/agent/dist/session/session-worker.js')], outfile: path.join(stage, WORKER_ASSET) });
  mkdirSync(out, { recursive: true });
  rmSync(executable, { force: true });
  const config = path.join(stage, 'sea-config.json');
  writeFileSync(
    config,
    JSON.stringify({
      main: path.join(stage, 'agent.cjs'),
      output: executable,
      executable: node,
      disableExperimentalSEAWarning: true,
      useCodeCache: false,
      assets: { [WORKER_ASSET]: path.join(stage, WORKER_ASSET) },
    }),
  );
  const made = spawnSync(node, ['--build-sea', config], { cwd: stage, encoding: 'utf8' });
  if (made.status !== 0) {
    console.error(`build-agent-sea: node --build-sea failed:\n${made.stdout}${made.stderr}`);
    process.exit(1);
  }
  console.log(executable);
} finally {
  rmSync(stage, { recursive: true, force: true });
}
