/**
 * `kairos schedule preview` and `kairos jobs upcoming <id>`: the next
 * occurrences of a schedule (or a job), as instants and local readings, with
 * a note wherever daylight saving time moved or repeated one.
 */
import type { Occurrence, SchedulePreview } from '@kairos/client';
import type { Command } from 'commander';
import { globalOptions, withClient } from '../context';
import { rfc3339, wholeNumber } from '../flags';
import type { CliIo } from '../io';
import { formatTable, formatTime, writeJson } from '../output';

interface PreviewFlags {
  schedule: string;
  timezone?: string;
  count?: number;
  from?: string;
}

export function registerScheduleCommands(program: Command, jobs: Command, io: CliIo): void {
  program
    .command('schedule')
    .description('check cron schedules before using them')
    .command('preview')
    .description('list the next occurrences of a schedule, with DST notes (creates nothing)')
    .requiredOption('--schedule <cron>', "cron with 5 or 6 fields, e.g. '30 2 * * *'")
    .option('--timezone <iana>', 'zone the schedule is read in (default UTC)')
    .option('--count <n>', 'how many occurrences (1 to 1000, default 10)', wholeNumber(1))
    .option('--from <rfc3339>', 'list occurrences at or after this instant (default now)', rfc3339)
    .action(async (flags: PreviewFlags, command: Command) => {
      const globals = globalOptions(command, io);
      const preview = await withClient(globals, (client) =>
        client.previewSchedule({
          schedule: flags.schedule,
          ...(flags.timezone === undefined ? {} : { timezone: flags.timezone }),
          ...(flags.count === undefined ? {} : { count: flags.count }),
          ...(flags.from === undefined ? {} : { from: flags.from }),
        }),
      );
      writePreview(io, preview, globals.json);
    });

  jobs
    .command('upcoming')
    .description("list a job's next occurrences, with DST notes")
    .argument('<id>', 'job id')
    .option('--count <n>', 'how many occurrences (1 to 1000, default 10)', wholeNumber(1))
    .action(async (id: string, flags: { count?: number }, command: Command) => {
      const globals = globalOptions(command, io);
      const preview = await withClient(globals, (client) => client.listUpcoming(id, flags.count === undefined ? {} : { count: flags.count }));
      writePreview(io, preview, globals.json);
    });
}

function writePreview(io: CliIo, preview: SchedulePreview, json: boolean): void {
  if (json) {
    writeJson(io.stdout, preview);
    return;
  }
  if (preview.occurrences.length === 0) {
    io.stdout.write('no upcoming occurrences\n');
    return;
  }
  const rows = preview.occurrences.map((o) => [formatTime(o.at), `${o.local.replace('T', ' ')} ${o.offset}`, dstNote(o)]);
  io.stdout.write(formatTable(['AT', `LOCAL (${preview.timezone})`, 'DST'], rows));
}

/** The DST mark in words. */
function dstNote(occurrence: Occurrence): string {
  switch (occurrence.dst) {
    case 'gap-shifted':
      return `shifted: ${occurrence.scheduledLocal?.slice(11) ?? 'the written time'} does not exist that day (spring forward)`;
    case 'repeated-first':
      return 'first of a repeated hour (fall back); fires once';
    case 'repeated-elapsed':
      return 'repeated hour, second pass: hourly schedules follow elapsed time';
    case null:
      return '-';
  }
}
