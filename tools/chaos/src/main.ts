/**
 * `npm run chaos -- --minutes N --seed S [--out DIR] [--keep]`
 *
 * Runs one seeded fault-injection session on this machine with real
 * processes, checks the history, prints a report and writes:
 *   <out>/latest.json                      the summary (the documented shape)
 *   <out>/seed-<S>-<N>min.json             the same, kept per seed and length
 *   <out>/seed-<S>-<N>min.txt              the report
 *   <out>/history-seed-<S>-<N>min.json     the full history (re-check with --check)
 * <out> defaults to tools/chaos/results. Exit code: 0 pass, 1 fail, 2 the
 * harness itself failed.
 *
 * `--check <history.json>` re-runs the checker on a saved history and rewrites
 * that history's summary and report in <out> (and latest.json with `--latest`).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkHistory } from './checker';
import type { History } from './history';
import { renderReport, summarize } from './report';
import { abortSession, appendLine, removeWorkDir, runSession, writeJson } from './session';

interface Args {
  minutes: number;
  seed: number;
  out: string;
  keep: boolean;
  check: string | undefined;
  latest: boolean;
}

function parseArgs(argv: string[]): Args {
  const args: Args = { minutes: 1, seed: 42, out: path.resolve(__dirname, '..', 'results'), keep: false, check: undefined, latest: false };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      const next = argv[++i];
      if (next === undefined) throw new Error(`${flag} needs a value`);
      return next;
    };
    switch (flag) {
      case '--minutes':
        args.minutes = Number(value());
        if (!(args.minutes > 0 && args.minutes <= 120)) throw new Error('--minutes must be a number in (0, 120]');
        break;
      case '--seed':
        args.seed = Number(value());
        if (!Number.isInteger(args.seed) || args.seed < 0) throw new Error('--seed must be a whole number >= 0');
        break;
      case '--out':
        args.out = path.resolve(value());
        break;
      case '--keep':
        args.keep = true;
        break;
      case '--check':
        args.check = path.resolve(value());
        break;
      case '--latest':
        args.latest = true;
        break;
      case '--help':
      case '-h':
        process.stdout.write('usage: npm run chaos -- --minutes N --seed S [--out DIR] [--keep] | --check history.json [--out DIR] [--latest]\n');
        process.exit(0);
        break;
      default:
        throw new Error(`unknown argument ${flag}`);
    }
  }
  return args;
}

function readPrevious(file: string): { details?: { durationsMs?: { total?: number } } } | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as { details?: { durationsMs?: { total?: number } } };
  } catch {
    return undefined;
  }
}

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if (args.check) {
    const history = JSON.parse(readFileSync(args.check, 'utf8')) as History;
    const result = checkHistory(history);
    const stem = `seed-${history.seed}-${history.minutes}min`;
    const previous = readPrevious(path.join(args.out, `${stem}.json`));
    const summary = summarize(history, result, previous?.details?.durationsMs?.total ?? 0);
    mkdirSync(args.out, { recursive: true });
    writeJson(path.join(args.out, `${stem}.json`), summary);
    writeFileSync(path.join(args.out, `${stem}.txt`), renderReport(summary));
    if (args.latest) writeJson(path.join(args.out, 'latest.json'), summary);
    process.stdout.write(renderReport(summary));
    return result.verdict === 'pass' ? 0 : 1;
  }
  mkdirSync(args.out, { recursive: true });
  const workDir = path.join(os.tmpdir(), `kairos-chaos-${args.seed}-${process.pid}`);
  mkdirSync(workDir, { recursive: true });
  const harnessLog = path.join(workDir, 'harness.log');
  const began = Date.now();
  const log = (message: string, fields: Record<string, unknown> = {}) => {
    const line = `${new Date().toISOString()} +${((Date.now() - began) / 1000).toFixed(1)}s ${message} ${JSON.stringify(fields)}`;
    process.stderr.write(`${line}\n`);
    appendLine(harnessLog, line);
  };
  const onSignal = (signal: string) => {
    log('interrupted: stopping everything this session started', { signal });
    void abortSession().finally(() => process.exit(130));
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));

  log('chaos session starting', { seed: args.seed, minutes: args.minutes, workDir });
  const { history, result } = await runSession({ minutes: args.minutes, seed: args.seed, workDir, log });
  const summary = summarize(history, result, Date.now() - began);
  const stem = `seed-${args.seed}-${args.minutes}min`;
  writeJson(path.join(args.out, 'latest.json'), summary);
  writeJson(path.join(args.out, `${stem}.json`), summary);
  writeJson(path.join(args.out, `history-${stem}.json`), history);
  const report = renderReport(summary);
  writeFileSync(path.join(args.out, `${stem}.txt`), report);
  process.stdout.write(report);
  if (result.verdict === 'pass' && !args.keep) removeWorkDir(workDir);
  else log('work directory kept (process logs)', { workDir });
  return result.verdict === 'pass' ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`chaos harness failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    void abortSession().finally(() => process.exit(2));
  },
);
