// What check-generated.mjs and generate-clients.mjs share: the repository root,
// where the buf binary is, and comparing a freshly generated tree with the
// committed one.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The script of the buf binary shipped in the @bufbuild/buf npm package (run it with node). */
export function bufScript() {
  return createRequire(path.join(root, 'package.json')).resolve('@bufbuild/buf/bin/buf');
}

/** Relative paths of all files under dir (empty if dir does not exist), sorted. */
export function listFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(dir, path.join(entry.parentPath ?? entry.path, entry.name)))
    .sort();
}

/**
 * Differences between a fresh and a committed tree, as readable lines: first
 * the fresh files in order (missing, stale), then the committed files nothing
 * generates any more (extra). `say` words each line from the file's path
 * relative to the root (with `/`); `include` keeps only the files it accepts.
 *
 * @param {string} freshDir
 * @param {string} committedDir absolute
 * @param {{ missing: (shown: string) => string, stale: (shown: string) => string, extra: (shown: string) => string }} say
 * @param {(file: string) => boolean} [include]
 * @returns {string[]}
 */
export function compareTrees(freshDir, committedDir, say, include = () => true) {
  const fresh = listFiles(freshDir).filter(include);
  const committed = listFiles(committedDir).filter(include);
  const freshSet = new Set(fresh);
  const committedSet = new Set(committed);
  const shown = (file) => path.relative(root, path.join(committedDir, file)).split(path.sep).join('/');
  const problems = [];
  for (const file of fresh) {
    if (!committedSet.has(file)) problems.push(say.missing(shown(file)));
    else if (!readFileSync(path.join(freshDir, file)).equals(readFileSync(path.join(committedDir, file)))) problems.push(say.stale(shown(file)));
  }
  for (const file of committed) if (!freshSet.has(file)) problems.push(say.extra(shown(file)));
  return problems;
}
