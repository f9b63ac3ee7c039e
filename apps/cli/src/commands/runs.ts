/** `kairos runs <jobId>`: a job's executions (and skipped occurrences), oldest first. */
import { runJson, type Run } from '@kairos/client';
import type { Command } from 'commander';
import { globalOptions, withClient } from '../context';
import { wholeNumber } from '../flags';
import type { CliIo } from '../io';
import { formatTable, formatTime, NONE, truncate, writeJson } from '../output';

export function registerRunsCommand(program: Command, io: CliIo): void {
  program
    .command('runs')
    .description("list a job's runs, oldest first")
    .argument('<jobId>', 'job id')
    .option('--limit <n>', 'page size (default 100, at most 1000)', wholeNumber(1))
    .option('--cursor <cursor>', 'continue from a previous page')
    .action(async (jobId: string, flags: { limit?: number; cursor?: string }, command: Command) => {
      const globals = globalOptions(command, io);
      const page = await withClient(globals, (client) => client.listRuns(jobId, flags));
      if (globals.json) {
        writeJson(io.stdout, { runs: page.runs.map(runJson), nextCursor: page.nextCursor });
        return;
      }
      io.stdout.write(page.runs.length === 0 ? 'no runs\n' : formatTable(RUN_COLUMNS, page.runs.map(runRow)));
      if (page.nextCursor !== null) io.stdout.write(`more: add --cursor ${page.nextCursor}\n`);
    });
}

const RUN_COLUMNS = ['RUN', 'ATTEMPT', 'OUTCOME', 'SCHEDULED FOR', 'STARTED', 'FINISHED', 'WORKER', 'FENCE', 'REASON', 'ERROR'] as const;

function runRow(run: Run): string[] {
  return [
    run.runId,
    String(run.attempt),
    run.outcome,
    formatTime(run.scheduledFor),
    formatTime(run.startedAt),
    formatTime(run.finishedAt),
    run.workerId ?? NONE,
    run.leaseGeneration === 0 ? NONE : String(run.leaseGeneration),
    run.reason ?? NONE,
    run.error === null ? NONE : truncate(run.error),
  ];
}
