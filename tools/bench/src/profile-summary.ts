/**
 * Summarises V8 .cpuprofile files written by `npm run bench -- --cpu-prof`:
 * self time per function and per package, heaviest first.
 *
 *   node tools/bench/dist/profile-summary.js <file.cpuprofile>... [--top 25] [--inclusive]
 *
 * `--inclusive` adds the heaviest functions by total time (samples in which the
 * function is anywhere on the stack, counted once per sample): where a hot
 * path's time goes, not only which leaf spends it.
 *
 * `--busiest MS` keeps only the MS milliseconds of the profile with the most
 * busy (not idle) samples: a spike's drain inside a profile of a whole
 * workload (W3 with `--only w3 --rounds 1`), not counting the first
 * `--skip MS` (default 5000: the process's start-up, loading modules).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

function packageOf(url: string): string {
  if (!url) return '(native / gc / idle)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  const m = /\/(apps|libs|tools)\/([^/]+)\//.exec(url);
  if (m) return `${m[1]}/${m[2]}`;
  if (url.startsWith('node:')) return 'node:internal';
  return path.basename(url);
}

function functionKey(node: ProfileNode): string {
  const name = node.callFrame.functionName || '(anonymous)';
  return `${name}  ${node.callFrame.url ? `${packageOf(node.callFrame.url)}:${path.basename(node.callFrame.url)}:${node.callFrame.lineNumber + 1}` : ''}`;
}

/** Total time per function: each sample counts once for every distinct function on its stack. */
function inclusiveTimes(profile: Profile, byId: Map<number, ProfileNode>): Map<string, number> {
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const totals = new Map<string, number>();
  profile.samples.forEach((leaf, i) => {
    const seen = new Set<string>();
    for (let id: number | undefined = leaf; id !== undefined; id = parent.get(id)) {
      const node = byId.get(id)!;
      if (node.callFrame.functionName === '(idle)' || node.callFrame.functionName === '(root)') continue;
      seen.add(functionKey(node));
    }
    for (const key of seen) totals.set(key, (totals.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  return totals;
}

/** The `ms`-long stretch of `profile` with the most busy samples (two pointers over the sample times). */
function busiestWindow(profile: Profile, byId: Map<number, ProfileNode>, ms: number, skipMs: number): Profile {
  const times: number[] = [];
  let t = profile.startTime;
  for (const delta of profile.timeDeltas) times.push((t += delta));
  const busyAt = profile.samples.map((id, i) => (byId.get(id)?.callFrame.functionName === '(idle)' ? 0 : (profile.timeDeltas[i] ?? 0)));
  let best = { from: 0, to: 0, busy: -1 };
  const first = times.findIndex((time) => time - profile.startTime >= skipMs * 1000);
  if (first < 0) throw new Error(`the profile is shorter than --skip ${skipMs} ms`);
  let from = first;
  let busy = 0;
  for (let to = first; to < times.length; to++) {
    busy += busyAt[to]!;
    while (times[to]! - times[from]! > ms * 1000) busy -= busyAt[from++]!;
    if (busy > best.busy) best = { from, to: to + 1, busy };
  }
  return {
    ...profile,
    startTime: times[best.from] ?? profile.startTime,
    endTime: times[best.to - 1] ?? profile.endTime,
    samples: profile.samples.slice(best.from, best.to),
    timeDeltas: profile.timeDeltas.slice(best.from, best.to),
  };
}

async function summarise(file: string, top: number, inclusive: boolean, busiestMs: number | undefined, skipMs: number): Promise<string> {
  const whole = JSON.parse(await readFile(file, 'utf8')) as Profile;
  const byId = new Map(whole.nodes.map((n) => [n.id, n]));
  const profile = busiestMs === undefined ? whole : busiestWindow(whole, byId, busiestMs, skipMs);
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = profile.endTime - profile.startTime;
  const byFunction = new Map<string, number>();
  const byPackage = new Map<string, number>();
  let idle = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const name = node.callFrame.functionName || '(anonymous)';
    if (name === '(idle)') {
      idle += us;
      continue;
    }
    const key = functionKey(node);
    byFunction.set(key, (byFunction.get(key) ?? 0) + us);
    const pkg = ['(garbage collector)', '(program)'].includes(name) ? name : packageOf(node.callFrame.url);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + us);
  }
  const busy = total - idle;
  const pct = (us: number) => `${((100 * us) / Math.max(1, busy)).toFixed(1).padStart(5)}%`;
  const lines = [
    `${path.basename(file)}: ${(total / 1e6).toFixed(2)} s profiled${busiestMs === undefined ? '' : ` (its busiest ${busiestMs} ms)`}, ${(busy / 1e6).toFixed(2)} s busy`,
  ];
  lines.push('  by package (self time, % of busy):');
  for (const [pkg, us] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 15)) lines.push(`    ${pct(us)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${pkg}`);
  lines.push(`  top ${top} functions (self time):`);
  for (const [fn, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`    ${pct(us)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${fn}`);
  if (inclusive) {
    lines.push(`  top ${top} functions (total time, callees included):`);
    for (const [fn, us] of [...inclusiveTimes(profile, byId)].sort((a, b) => b[1] - a[1]).slice(0, top)) {
      lines.push(`    ${pct(us)}  ${(us / 1000).toFixed(0).padStart(6)} ms  ${fn}`);
    }
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const topIndex = args.indexOf('--top');
  const top = topIndex >= 0 ? Number(args.splice(topIndex, 2)[1]) : 25;
  const inclusiveIndex = args.indexOf('--inclusive');
  if (inclusiveIndex >= 0) args.splice(inclusiveIndex, 1);
  const busiestIndex = args.indexOf('--busiest');
  const busiestMs = busiestIndex >= 0 ? Number(args.splice(busiestIndex, 2)[1]) : undefined;
  if (busiestMs !== undefined && !(busiestMs > 0)) throw new Error('--busiest takes a positive number of milliseconds');
  const skipIndex = args.indexOf('--skip');
  const skipMs = skipIndex >= 0 ? Number(args.splice(skipIndex, 2)[1]) : 5_000;
  if (!(skipMs >= 0)) throw new Error('--skip takes a number of milliseconds');
  if (args.length === 0) throw new Error('usage: profile-summary <file.cpuprofile>... [--top N] [--inclusive] [--busiest MS [--skip MS]]');
  for (const file of args) process.stdout.write(`${await summarise(file, top, inclusiveIndex >= 0, busiestMs, skipMs)}\n\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
