#!/usr/bin/env node
// Builds the operators' web console (apps/coordinator/console) into
// apps/coordinator/dist/ui, where the coordinator serves it at /ui
// (apps/coordinator/src/api/console.ts). esbuild bundles and minifies the
// TypeScript into one script (no type check: `npm run typecheck` does that);
// the script and the style sheet get a content hash in their names, and
// index.html is written to load them. No inline script or style: the page's
// Content-Security-Policy allows neither. Offline: esbuild is a dev dependency.
//   node tools/scripts/build-console.mjs
// Prints one JSON line: the files and their sizes in bytes (raw and gzipped).
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build, transform } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const source = path.join(root, 'apps/coordinator/console');
const out = path.join(root, 'apps/coordinator/dist/ui');

const hashed = (name, ext, content) => `${name}-${createHash('sha256').update(content).digest('hex').slice(0, 10)}.${ext}`;

async function main() {
  const bundle = await build({
    entryPoints: [path.join(source, 'src/main.ts')],
    bundle: true,
    minify: true,
    format: 'iife',
    target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
    legalComments: 'none',
    write: false,
    logLevel: 'warning',
  });
  const js = bundle.outputFiles[0].contents;
  const css = (await transform(readFileSync(path.join(source, 'styles.css'), 'utf8'), { loader: 'css', minify: true })).code;
  const jsName = hashed('app', 'js', js);
  const cssName = hashed('app', 'css', css);
  const html = readFileSync(path.join(source, 'index.html'), 'utf8').replace('__JS__', jsName).replace('__CSS__', cssName);

  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const files = { 'index.html': html, 'favicon.svg': readFileSync(path.join(source, 'favicon.svg')), [jsName]: js, [cssName]: css };
  const sizes = {};
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(path.join(out, name), content);
    const buffer = Buffer.from(content);
    sizes[name] = { bytes: buffer.length, gzip: gzipSync(buffer, { level: 9 }).length };
  }
  process.stdout.write(`${JSON.stringify({ out: path.relative(root, out), files: sizes })}\n`);
}

main().catch((error) => {
  process.stderr.write(`build-console: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
