#!/usr/bin/env node
// Fails when the committed protobuf code is stale, the .proto files break lint,
// or they break compatibility with the previous commit.
//
// 1. Regenerates proto/ with the committed template (proto/buf.gen.yaml) into a
//    temporary folder (`buf generate -o <tmp>` prefixes the template's `out`), and
//    compares the result file by file with libs/proto/src/gen.
// 2. Runs `buf lint proto`.
// 3. Runs `buf breaking proto` against the previous commit (HEAD~1; the
//    module's `breaking` rules, FILE: generated code in every language keeps
//    compiling). Skipped, saying so, in a clone without that commit (shallow).
// Exit code 0 when all pass, 1 otherwise (with a message naming what to do).
//
// Works offline on a clean checkout after `npm ci`: the buf binary ships inside
// the @bufbuild/buf npm package and protoc-gen-es is a local node_modules plugin.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { bufScript, compareTrees, root } from './lib/generated.mjs';

const template = 'proto/buf.gen.yaml';
const committedDir = 'libs/proto/src/gen'; // the template's `out`, relative to the root
const regenerate = `npx buf generate proto --template ${template}`;

/** Runs buf from the repository root (the template's paths are relative to it). */
function buf(args) {
  const result = spawnSync(process.execPath, [bufScript(), ...args], { cwd: root, encoding: 'utf8' });
  if (result.error) throw new Error(`could not run buf ${args[0]}: ${result.error.message}`, { cause: result.error });
  return { ok: result.status === 0, output: `${result.stdout}${result.stderr}`.trim() };
}

/** How this script words each difference between the fresh and the committed trees. */
const say = {
  missing: (shown) => `  missing: ${shown} (generated from the .proto files but not committed)`,
  stale: (shown) => `  stale:   ${shown} (differs from what the .proto files generate)`,
  extra: (shown) => `  extra:   ${shown} (no .proto file generates it any more)`,
};

async function main() {
  let failed = false;
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'kairos-gen-'));
  try {
    const generated = buf(['generate', 'proto', '--template', template, '-o', tmp]);
    if (!generated.ok) {
      console.error(`check-generated: buf generate failed:\n${generated.output}`);
      failed = true;
    } else {
      const problems = compareTrees(path.join(tmp, committedDir), path.join(root, committedDir), say);
      if (problems.length > 0) {
        console.error(
          [
            `check-generated: generated protobuf code is out of date (${problems.length} file(s)):`,
            ...problems,
            `Regenerate from the repository root with:  ${regenerate}`,
            'and commit the result (never edit libs/proto/src/gen by hand).',
          ].join('\n'),
        );
        failed = true;
      }
    }
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }

  const lint = buf(['lint', 'proto']);
  if (!lint.ok) {
    console.error(`check-generated: buf lint proto failed:\n${lint.output}`);
    failed = true;
  }

  let breakingNote = 'and buf breaking against the previous commit';
  const previous = spawnSync('git', ['rev-parse', '--verify', '--quiet', 'HEAD~1'], { cwd: root, encoding: 'utf8' });
  if (previous.status !== 0) {
    breakingNote = '(buf breaking skipped: no previous commit in this clone)';
  } else {
    const breaking = buf(['breaking', 'proto', '--against', '.git#ref=HEAD~1,subdir=proto']);
    if (!breaking.ok) {
      console.error(`check-generated: buf breaking against the previous commit failed:\n${breaking.output}`);
      failed = true;
    }
  }

  if (failed) process.exit(1);
  console.log(`check-generated: libs/proto/src/gen is up to date and proto/ passes buf lint ${breakingNote}.`);
}

main().catch((error) => {
  console.error('check-generated: unexpected failure:', error);
  process.exit(1);
});
