/**
 * The repository speaks for itself: every relative link in its Markdown
 * (README, docs, each project's README) leads to a file that exists, and to a
 * heading that exists when it names one; every repository path written in
 * backticks (`apps/…`, `libs/…`, `docs/…`, …) exists too.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './client-env';

const TOP_LEVEL = ['apps', 'libs', 'proto', 'docs', 'tools', 'deploy', 'clients', '.ci'];
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', '.tmp', '.kairos', '.nx', 'gen', 'results', '.pytest_cache']);

function markdownFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (SKIP_DIRS.has(entry.name)) continue;
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...markdownFiles(full));
    else if (entry.name.endsWith('.md')) out.push(full);
  }
  return out;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replace(/ /g, '-');
}

/** The text outside fenced code blocks (examples may name files of the reader's machine). */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```$/gm, '');
}

function anchorsOf(file: string): Set<string> {
  const text = prose(readFileSync(file, 'utf8'));
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((match) => slug(match[1]!)));
}

const files = markdownFiles(ROOT).filter((file) => !file.includes(`${path.sep}node_modules${path.sep}`));

describe('references in the Markdown point at what exists', () => {
  test('there are documents to check', () => {
    expect(files.map((file) => path.relative(ROOT, file))).toEqual(expect.arrayContaining(['README.md', 'docs/api.md', 'docs/clients.md']));
  });

  test.each(files.map((file) => [path.relative(ROOT, file), file]))('%s', (_name, file) => {
    const text = prose(readFileSync(file, 'utf8'));
    const broken: string[] = [];
    for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = match[1]!;
      if (/^[a-z]+:/i.test(target)) continue; // http:, https:, mailto:
      const [filePart, anchor] = target.split('#') as [string, string | undefined];
      const resolved = filePart === '' ? file : path.resolve(path.dirname(file), filePart);
      if (!existsSync(resolved)) {
        broken.push(`link ${target}: no such file`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) broken.push(`link ${target}: no such heading`);
    }
    for (const match of text.matchAll(/`([^`\s]+)`/g)) {
      const candidate = match[1]!.replace(/[.,:;)]+$/, '');
      const top = candidate.split('/')[0]!;
      // Placeholders (`NNNN_name.sql`, `<id>`, globs) name no one file.
      if (!candidate.includes('/') || !TOP_LEVEL.includes(top) || /[*{}<>$…]|NNNN/.test(candidate)) continue;
      const resolved = path.join(ROOT, candidate.split(':')[0]!);
      if (!existsSync(resolved) || (candidate.endsWith('/') && !statSync(resolved).isDirectory())) broken.push(`path \`${candidate}\`: not in the repository`);
    }
    expect(broken).toEqual([]);
  });
});
