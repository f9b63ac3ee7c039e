#!/usr/bin/env node
// Builds the agent's installable tarball: `npm install -g --ignore-scripts kairos-agent-<version>.tgz`
// gives the `kairos-agent` command on any machine with Node, without the monorepo and
// without a registry: every runtime dependency travels inside it (bundleDependencies),
// the workspace libraries (@kairos/proto, @kairos/tasks) included; nothing for
// development (no TypeScript, no embedded PostgreSQL). Run after `npm run build`.
//   node tools/scripts/pack-agent.mjs [--out <dir>]   (default: .tmp/dist)
// Prints the tarball's path.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const outIndex = process.argv.indexOf('--out');
const out = path.resolve(outIndex > 0 ? process.argv[outIndex + 1] : path.join(root, '.tmp/dist'));
const BUNDLED = { '@kairos/proto': 'libs/proto', '@kairos/tasks': 'libs/tasks', '@kairos/tracing': 'libs/tracing' };

/** A package's publishable files (its package.json `files`, minus build state and tests). */
function copyPackage(from, to) {
  mkdirSync(to, { recursive: true });
  for (const file of ['package.json', 'README.md']) cpSync(path.join(from, file), path.join(to, file));
  cpSync(path.join(from, 'dist'), path.join(to, 'dist'), {
    recursive: true,
    filter: (source) => !/(\.tsbuildinfo|\.test\.[jt]s(\.map)?|\.test\.d\.ts(\.map)?)$/.test(source) && !source.includes(`${path.sep}test-support`),
  });
}

function npm(args, cwd) {
  const result = spawnSync('npm', args, { cwd, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`npm ${args.join(' ')} failed: ${result.stderr}`);
  return result.stdout;
}

const stage = mkdtempSync(path.join(os.tmpdir(), 'kairos-agent-pack-'));
try {
  const app = path.join(stage, 'agent');
  copyPackage(path.join(root, 'apps/agent'), app);
  // The workspace libraries as tarballs of their own, installed into the stage like any dependency.
  const libs = path.join(stage, 'libs');
  const specs = {};
  for (const [name, dir] of Object.entries(BUNDLED)) {
    copyPackage(path.join(root, dir), path.join(libs, name));
    const [{ filename }] = JSON.parse(npm(['pack', '--json', '--pack-destination', libs], path.join(libs, name)).replace(/^[^[]*/, ''));
    specs[name] = `file:${path.join(libs, filename)}`;
  }
  const manifestPath = path.join(app, 'package.json');
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  const versions = { ...manifest.dependencies };
  writeFileSync(manifestPath, JSON.stringify({ ...manifest, dependencies: { ...manifest.dependencies, ...specs } }, null, 2));
  npm(['install', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--no-package-lock', '--prefer-offline'], app);
  // Published with the versions it depends on, and everything bundled.
  writeFileSync(manifestPath, `${JSON.stringify({ ...manifest, dependencies: versions, bundleDependencies: true }, null, 2)}\n`);
  mkdirSync(out, { recursive: true });
  const [{ filename }] = JSON.parse(npm(['pack', '--json', '--pack-destination', out], app).replace(/^[^[]*/, ''));
  console.log(path.join(out, filename));
} finally {
  rmSync(stage, { recursive: true, force: true });
}
