#!/usr/bin/env node
// Generates the committed stubs of the Python and Go clients from proto/kairos/v1,
// or with --check fails when they are stale:
//   clients/python/src/kairos/v1/*_pb2*.py(i)  grpcio-tools (python -m grpc_tools.protoc)
//   clients/go/gen/kairos/v1/*.pb.go            buf with clients/go/buf.gen.yaml
// The tools come from tools/scripts/client-env.mjs (.tmp/python, .tmp/go-bin).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bufScript, compareTrees, listFiles, root } from './lib/generated.mjs';

const check = process.argv.includes('--check');

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: root, encoding: 'utf8', ...options });
  if (result.error || result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed: ${result.error?.message ?? ''}${result.stdout ?? ''}${result.stderr ?? ''}`);
  }
  return result.stdout;
}

const env = JSON.parse(run(process.execPath, ['tools/scripts/client-env.mjs'], { stdio: ['ignore', 'pipe', 'inherit'] }));
const protos = readdirSync(path.join(root, 'proto/kairos/v1'))
  .filter((file) => file.endsWith('.proto'))
  .map((file) => `proto/kairos/v1/${file}`);

/** How this script words each difference between the fresh and the committed stubs. */
const say = {
  missing: (shown) => `  missing: ${shown}`,
  stale: (shown) => `  stale: ${shown}`,
  extra: (shown) => `  not generated any more: ${shown}`,
};

const scratch = mkdtempSync(path.join(os.tmpdir(), 'kairos-clients-'));
const problems = [];
try {
  // Python: generated next to the hand-written package __init__.py files.
  const pyOut = check ? path.join(scratch, 'py') : path.join(root, 'clients/python/src');
  mkdirSync(pyOut, { recursive: true });
  const pyDir = path.join(root, 'clients/python/src/kairos/v1');
  if (!check) for (const file of listFiles(pyDir)) if (file.includes('_pb2')) rmSync(path.join(pyDir, file));
  run(env.python, ['-m', 'grpc_tools.protoc', '-Iproto', `--python_out=${pyOut}`, `--pyi_out=${pyOut}`, `--grpc_python_out=${pyOut}`, ...protos]);

  // Go: buf with the committed template; -o prefixes the template's out.
  const goArgs = ['generate', 'proto', '--path', 'proto/kairos/v1', '--template', 'clients/go/buf.gen.yaml'];
  const goEnv = { ...process.env, PATH: `${env.goBin}${path.delimiter}${process.env.PATH}` };
  run(process.execPath, [bufScript(), ...goArgs, ...(check ? ['-o', path.join(scratch, 'go')] : [])], { env: goEnv });

  if (check) {
    const pairs = [
      [path.join(scratch, 'py/kairos/v1'), pyDir, (file) => file.includes('_pb2')],
      [path.join(scratch, 'go/clients/go/gen'), path.join(root, 'clients/go/gen'), () => true],
    ];
    for (const [fresh, committed, generated] of pairs) problems.push(...compareTrees(fresh, committed, say, generated));
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}

if (problems.length > 0) {
  console.error(`The generated client code differs from proto/:\n${problems.join('\n')}\nRun \`node tools/scripts/generate-clients.mjs\` and commit the result.`);
  process.exit(1);
}
console.log(check ? 'clients/python and clients/go stubs are up to date' : 'generated clients/python and clients/go stubs');
