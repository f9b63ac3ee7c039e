/**
 * `kairos jobs create|get|list|edit|cancel|abort|pause|resume|trigger`: JobService calls
 * through @kairos/client, printed as tables or (--json) as one JSON document.
 * `jobs create-many` (JSON lines in, one answer per line) is create-many.ts's.
 */
import {
  jobJson,
  MISFIRE_POLICIES,
  OVERLAP_POLICIES,
  type CreateJobInput,
  type OverlapPolicy,
  type Job,
  type MisfirePolicy,
  type RetryPolicyInput,
  type UpdateJobInput,
} from '@kairos/client';
import { Option, type Command } from 'commander';
import { globalOptions, withClient } from '../context';
import { registerCreateMany } from './create-many';
import { UsageError } from '../errors';
import { decimal, jobState, payloadFromFlags, rfc3339, wholeNumber } from '../flags';
import type { CliIo } from '../io';
import { formatFields, formatTable, formatTime, NONE, writeJson } from '../output';

interface CreateFlags {
  runAt?: string;
  schedule?: string;
  timezone?: string;
  task: string;
  payload?: string;
  payloadFile?: string;
  name?: string;
  maxAttempts?: number;
  timeoutSeconds?: number;
  misfirePolicy?: MisfirePolicy;
  idempotencyKey?: string;
  retryInitialMs?: number;
  retryMaxMs?: number;
  retryMultiplier?: number;
  retryJitter?: number;
  jitterMs?: number;
  pauseOnFailure?: boolean;
  overlapPolicy?: OverlapPolicy;
  catchupWindowMs?: number;
}

interface EditFlags extends Omit<CreateFlags, 'task' | 'idempotencyKey' | 'pauseOnFailure'> {
  pauseOnFailure?: 'yes' | 'no';
  ifVersion?: number;
}

interface ListFlags {
  state?: Exclude<Job['state'], 'UNSPECIFIED'>;
  task?: string;
  name?: string;
  limit?: number;
  cursor?: string;
}

/** Registers `kairos jobs …`; returns the `jobs` command for subcommands registered elsewhere. */
export function registerJobCommands(program: Command, io: CliIo): Command {
  const jobs = program.command('jobs').description('create, inspect and steer jobs');

  jobs
    .command('create')
    .description('schedule a one-off (--run-at) or recurring (--schedule) job')
    .requiredOption('--task <name>', 'task that runs the job, e.g. http, sleep')
    .option('--run-at <rfc3339>', 'one-off: when to run, e.g. 2030-01-01T09:00:00Z (past = now)', rfc3339)
    .option('--schedule <cron>', "recurring: cron with 5 or 6 fields, e.g. '*/5 * * * *'")
    .option('--timezone <iana>', 'time zone of --schedule (default UTC)')
    .option('--payload <json>', 'task input, a JSON object')
    .option('--payload-file <path>', 'read the payload (a JSON object) from a file')
    .option('--name <label>', 'human-readable label')
    .option('--max-attempts <n>', 'attempts per occurrence (default 3)', wholeNumber(1))
    .option('--timeout-seconds <n>', 'abort an attempt after this long (default: no timeout)', wholeNumber(0))
    .addOption(
      new Option('--misfire-policy <policy>', 'missed occurrences: run once late, skip, or catch up in order').choices(MISFIRE_POLICIES),
    )
    .option('--idempotency-key <key>', 'makes retrying this command safe')
    .option('--retry-initial-ms <ms>', 'delay after the first failed attempt (default: the coordinator\'s, 1000)', wholeNumber(0))
    .option('--retry-max-ms <ms>', 'longest retry delay (default 3600000)', wholeNumber(0))
    .option('--retry-multiplier <x>', 'retry delay growth per attempt, 1 to 10 (default 2)', decimal)
    .option('--retry-jitter <fraction>', 'take up to this fraction off each retry delay, 0 to 1 (default 0)', decimal)
    .option('--jitter-ms <ms>', 'recurring: start each occurrence up to this late, fixed per occurrence (at most 3600000)', wholeNumber(0))
    .option('--pause-on-failure', 'recurring: pause the job when an occurrence exhausts its attempts')
    .addOption(
      new Option('--overlap-policy <policy>', 'recurring: occurrences due while the previous run still runs (default skip)').choices(
        OVERLAP_POLICIES,
      ),
    )
    .option('--catchup-window-ms <ms>', 'misfire policy catch-up: skip missed occurrences older than this', wholeNumber(1000))
    .action(async (flags: CreateFlags, command: Command) => {
      const input = createInput(flags);
      const globals = globalOptions(command, io);
      const result = await withClient(globals, (client) => client.createJob(input));
      // --json prints what POST /jobs answers: the job too.
      if (globals.json) writeJson(io.stdout, { jobId: result.jobId, created: result.created, job: jobJson(result.job) });
      else if (result.created) io.stdout.write(`created job ${result.jobId}\n`);
      else io.stdout.write(`job ${result.jobId} already exists (same idempotency key and request)\n`);
    });

  registerCreateMany(jobs, io);

  jobs
    .command('get')
    .description('show one job')
    .argument('<id>', 'job id')
    .action(async (id: string, _flags: unknown, command: Command) => {
      const globals = globalOptions(command, io);
      const job = await withClient(globals, (client) => client.getJob(id));
      if (globals.json) writeJson(io.stdout, jobJson(job));
      else io.stdout.write(formatFields(jobFields(job)));
    });

  jobs
    .command('list')
    .description('list jobs, oldest first, one page at a time')
    .option('--state <state>', 'only jobs in this state (DUE, CLAIMED, COMPLETED, DEAD, PAUSED, CANCELLED)', jobState)
    .option('--task <name>', 'only jobs of this task')
    .option('--name <prefix>', 'only jobs whose name starts with this')
    .option('--limit <n>', 'page size (default 100, at most 1000)', wholeNumber(1))
    .option('--cursor <cursor>', 'continue from a previous page')
    .action(async (flags: ListFlags, command: Command) => {
      const globals = globalOptions(command, io);
      const page = await withClient(globals, (client) => client.listJobs(flags));
      if (globals.json) {
        writeJson(io.stdout, { jobs: page.jobs.map(jobJson), nextCursor: page.nextCursor });
        return;
      }
      io.stdout.write(page.jobs.length === 0 ? 'no jobs\n' : formatTable(JOB_COLUMNS, page.jobs.map(jobRow)));
      if (page.nextCursor !== null) io.stdout.write(`more: add --cursor ${page.nextCursor}\n`);
    });

  jobs
    .command('cancel')
    .description('cancel a job that is not running (DUE or PAUSED)')
    .argument('<id>', 'job id')
    .action(async (id: string, _flags: unknown, command: Command) => {
      const globals = globalOptions(command, io);
      await withClient(globals, (client) => client.cancelJob(id));
      if (globals.json) writeJson(io.stdout, { jobId: id, state: 'CANCELLED' });
      else io.stdout.write(`cancelled job ${id}\n`);
    });

  jobs
    .command('edit')
    .description('change a job in place (history stays on its id); a running job changes from its next claim')
    .argument('<id>', 'job id')
    .option('--schedule <cron>', 'make (or keep) it recurring on this schedule')
    .option('--timezone <iana>', 'zone of the schedule (alone: the current schedule, read in this zone)')
    .option('--run-at <rfc3339>', 'make (or keep) it one-off at this time', rfc3339)
    .option('--payload <json>', 'new task input, a JSON object')
    .option('--payload-file <path>', 'read the new payload from a file')
    .option('--name <label>', 'new label ("" clears it)')
    .option('--max-attempts <n>', 'attempts per occurrence', wholeNumber(1))
    .option('--timeout-seconds <n>', 'abort an attempt after this long (0 removes the timeout)', wholeNumber(0))
    .addOption(new Option('--misfire-policy <policy>', 'missed occurrences: run once late, or skip').choices(MISFIRE_POLICIES))
    .option('--retry-initial-ms <ms>', 'retry policy (the flags given replace the whole policy)', wholeNumber(0))
    .option('--retry-max-ms <ms>', 'longest retry delay', wholeNumber(0))
    .option('--retry-multiplier <x>', 'retry delay growth per attempt', decimal)
    .option('--retry-jitter <fraction>', 'fraction taken off each retry delay', decimal)
    .option('--jitter-ms <ms>', 'recurring: start jitter', wholeNumber(0))
    .addOption(new Option('--pause-on-failure <yes|no>', 'recurring: pause when an occurrence exhausts its attempts').choices(['yes', 'no']))
    .addOption(new Option('--overlap-policy <policy>', 'recurring: occurrences due while the previous run still runs').choices(OVERLAP_POLICIES))
    .option('--catchup-window-ms <ms>', 'misfire policy catch-up: skip missed occurrences older than this (0 removes it)', wholeNumber(0))
    .option('--if-version <n>', 'only if the job is still at this version (from "jobs get"); refused otherwise', wholeNumber(1))
    .action(async (id: string, flags: EditFlags, command: Command) => {
      const changes = editInput(flags);
      const globals = globalOptions(command, io);
      const result = await withClient(globals, (client) =>
        client.updateJob(id, changes, flags.ifVersion === undefined ? {} : { expectedVersion: flags.ifVersion }),
      );
      if (globals.json) writeJson(io.stdout, { job: jobJson(result.job), appliesFrom: result.appliesFrom });
      else {
        const when = result.appliesFrom === 'now' ? '' : ' (the job is running: the change applies from its next claim)';
        io.stdout.write(`updated job ${result.job.id} to version ${result.job.version}${when}: ${result.job.state}, next run ${formatTime(result.job.nextRunAt)}\n`);
      }
    });

  jobs
    .command('backfill')
    .description("run a recurring job's occurrences in a past range [--from, --to), in order, one at a time")
    .argument('<id>', 'job id')
    .option('--from <rfc3339>', 'start of the range (inclusive)', rfc3339)
    .option('--to <rfc3339>', 'end of the range (exclusive), not in the future', rfc3339)
    .option('--cancel', 'stop the backfill in progress instead')
    .action(async (id: string, flags: { from?: string; to?: string; cancel?: boolean }, command: Command) => {
      const globals = globalOptions(command, io);
      if (flags.cancel === true) {
        if (flags.from !== undefined || flags.to !== undefined) throw new UsageError('--cancel takes no --from or --to', '--cancel');
        const cancelled = await withClient(globals, (client) => client.cancelBackfill(id));
        if (globals.json) writeJson(io.stdout, { jobId: id, ...cancelled });
        else io.stdout.write(`cancelled the backfill of job ${id}${cancelled.finishing ? ' (the backfill run in progress finishes first)' : ''}\n`);
        return;
      }
      if (flags.from === undefined || flags.to === undefined) throw new UsageError('--from and --to are required (or --cancel)', '--from');
      const range = { from: flags.from, to: flags.to };
      const started = await withClient(globals, (client) => client.startBackfill(id, range));
      if (globals.json) writeJson(io.stdout, { jobId: id, ...started });
      else {
        io.stdout.write(
          `backfilling job ${id}: ${started.count} occurrences from ${formatTime(started.first)} to ${formatTime(started.last)}, ` +
            `then the schedule resumes at ${formatTime(started.resumeAt)}\n`,
        );
      }
    });

  jobs
    .command('abort')
    .description('stop the running run of a CLAIMED job (it ends CANCELLED; a recurring job goes on to its next occurrence)')
    .argument('<id>', 'job id')
    .option('--stop-schedule', 'recurring jobs: end the schedule too (the job becomes CANCELLED)')
    .action(async (id: string, flags: { stopSchedule?: boolean }, command: Command) => {
      const globals = globalOptions(command, io);
      const aborted = await withClient(globals, (client) => client.abortRun(id, { stopSchedule: flags.stopSchedule === true }));
      if (globals.json) writeJson(io.stdout, { jobId: id, ...aborted });
      else {
        io.stdout.write(
          `aborting run ${aborted.runId} of job ${id} on agent ${aborted.agentId ?? NONE}` +
            `${aborted.stopSchedule ? ' (schedule ends with it)' : ''}: follow it with "kairos runs ${id}"\n`,
        );
      }
    });

  const steer = [
    ['pause', 'paused', 'hold a DUE job until it is resumed'],
    ['resume', 'resumed', 'make a PAUSED job DUE again (missed occurrences follow its misfire policy)'],
    ['trigger', 'triggered', 'run a DUE or DEAD job now, once, without changing its schedule'],
  ] as const;
  for (const [verb, done, description] of steer) {
    jobs
      .command(verb)
      .description(description)
      .argument('<id>', 'job id')
      .action(async (id: string, _flags: unknown, command: Command) => {
        const globals = globalOptions(command, io);
        const job = await withClient(globals, (client) => {
          switch (verb) {
            case 'pause':
              return client.pauseJob(id);
            case 'resume':
              return client.resumeJob(id);
            case 'trigger':
              return client.triggerJob(id);
          }
        });
        if (globals.json) writeJson(io.stdout, jobJson(job));
        else io.stdout.write(`${done} job ${job.id}: ${job.state}, next run ${formatTime(job.nextRunAt)}\n`);
      });
  }
  return jobs;
}

/** The client input for `jobs edit`: only the flags given. */
function editInput(flags: EditFlags): UpdateJobInput {
  if (flags.runAt !== undefined && flags.schedule !== undefined) throw new UsageError('give --run-at or --schedule, not both', '--run-at');
  const payload = payloadFromFlags(flags) as UpdateJobInput['payload'];
  const retry = retryInput(flags);
  const changes: UpdateJobInput = {
    ...(flags.schedule === undefined ? {} : { schedule: flags.schedule }),
    ...(flags.timezone === undefined ? {} : { timezone: flags.timezone }),
    ...(flags.runAt === undefined ? {} : { runAt: flags.runAt }),
    ...(payload === undefined ? {} : { payload }),
    ...(flags.name === undefined ? {} : { name: flags.name === '' ? null : flags.name }),
    ...(flags.maxAttempts === undefined ? {} : { maxAttempts: flags.maxAttempts }),
    ...(flags.timeoutSeconds === undefined ? {} : { timeoutSeconds: flags.timeoutSeconds === 0 ? null : flags.timeoutSeconds }),
    ...(flags.misfirePolicy === undefined ? {} : { misfirePolicy: flags.misfirePolicy }),
    ...(retry === undefined ? {} : { retry }),
    ...(flags.jitterMs === undefined ? {} : { jitterMs: flags.jitterMs }),
    ...(flags.pauseOnFailure === undefined ? {} : { pauseOnFailure: flags.pauseOnFailure === 'yes' }),
    ...(flags.overlapPolicy === undefined ? {} : { overlapPolicy: flags.overlapPolicy }),
    ...(flags.catchupWindowMs === undefined ? {} : { catchupWindowMs: flags.catchupWindowMs === 0 ? null : flags.catchupWindowMs }),
  };
  if (Object.keys(changes).length === 0) throw new UsageError('nothing to change: give at least one flag (see --help)', '--schedule');
  return changes;
}

/** The retry policy from the --retry-* flags, or undefined when none was given. */
function retryInput(flags: Pick<CreateFlags, 'retryInitialMs' | 'retryMaxMs' | 'retryMultiplier' | 'retryJitter'>): RetryPolicyInput | undefined {
  const retry = {
    ...(flags.retryInitialMs === undefined ? {} : { initialIntervalMs: flags.retryInitialMs }),
    ...(flags.retryMaxMs === undefined ? {} : { maxIntervalMs: flags.retryMaxMs }),
    ...(flags.retryMultiplier === undefined ? {} : { multiplier: flags.retryMultiplier }),
    ...(flags.retryJitter === undefined ? {} : { jitter: flags.retryJitter }),
  };
  return Object.keys(retry).length === 0 ? undefined : retry;
}

/** The client input for `jobs create`; flag combinations are checked before any call. */
function createInput(flags: CreateFlags): CreateJobInput {
  // A JSON.parse result is JSON by construction; the client's type says so more narrowly.
  const payload = payloadFromFlags(flags) as CreateJobInput['payload'];
  const retry = retryInput(flags);
  const common = {
    ...(retry === undefined ? {} : { retry }),
    task: flags.task,
    ...(payload === undefined ? {} : { payload }),
    ...(flags.name === undefined ? {} : { name: flags.name }),
    ...(flags.maxAttempts === undefined ? {} : { maxAttempts: flags.maxAttempts }),
    ...(flags.timeoutSeconds === undefined ? {} : { timeoutSeconds: flags.timeoutSeconds }),
    ...(flags.misfirePolicy === undefined ? {} : { misfirePolicy: flags.misfirePolicy }),
    ...(flags.idempotencyKey === undefined ? {} : { idempotencyKey: flags.idempotencyKey }),
  };
  if (flags.runAt !== undefined && flags.schedule !== undefined) {
    throw new UsageError('give --run-at or --schedule, not both', '--run-at');
  }
  if (flags.runAt !== undefined) {
    if (flags.timezone !== undefined) throw new UsageError('--timezone applies to --schedule only', '--timezone');
    if (flags.jitterMs !== undefined) throw new UsageError('--jitter-ms applies to --schedule only', '--jitter-ms');
    if (flags.pauseOnFailure === true) throw new UsageError('--pause-on-failure applies to --schedule only', '--pause-on-failure');
    if (flags.overlapPolicy !== undefined) throw new UsageError('--overlap-policy applies to --schedule only', '--overlap-policy');
    return { ...common, runAt: flags.runAt };
  }
  if (flags.schedule !== undefined) {
    return {
      ...common,
      schedule: flags.schedule,
      ...(flags.timezone === undefined ? {} : { timezone: flags.timezone }),
      ...(flags.jitterMs === undefined ? {} : { jitterMs: flags.jitterMs }),
      ...(flags.pauseOnFailure === true ? { pauseOnFailure: true } : {}),
      ...(flags.overlapPolicy === undefined ? {} : { overlapPolicy: flags.overlapPolicy }),
      ...(flags.catchupWindowMs === undefined ? {} : { catchupWindowMs: flags.catchupWindowMs }),
    };
  }
  throw new UsageError('one of --run-at <rfc3339> or --schedule <cron> is required', '--run-at');
}

const JOB_COLUMNS = ['ID', 'NAME', 'TASK', 'STATE', 'WHEN', 'NEXT RUN', 'ATTEMPT'] as const;

function jobRow(job: Job): string[] {
  return [job.id, job.name ?? NONE, job.task, job.state, when(job), formatTime(job.nextRunAt), attempts(job)];
}

/** The schedule with its zone, or the one-off instant. */
function when(job: Job): string {
  if (job.schedule === null) return formatTime(job.runAt);
  return job.timezone === '' || job.timezone === 'UTC' ? job.schedule : `${job.schedule} (${job.timezone})`;
}

function attempts(job: Job): string {
  return `${job.attempt}/${job.maxAttempts}`;
}

function jobFields(job: Job): Array<[string, string]> {
  return [
    ['id', job.id],
    ['name', job.name ?? NONE],
    ['namespace', job.namespace],
    ['task', job.task],
    ['state', job.state],
    job.schedule !== null ? ['schedule', `${job.schedule} (${job.timezone || 'UTC'})`] : ['run at', formatTime(job.runAt)],
    ['next run', formatTime(job.nextRunAt)],
    ['attempt', attempts(job)],
    ['timeout', job.timeoutSeconds === 0 ? 'none' : `${job.timeoutSeconds}s`],
    ['misfire policy', job.misfirePolicy],
    [
      'retry',
      `${job.retry.initialIntervalMs} ms ×${job.retry.multiplier} up to ${job.retry.maxIntervalMs} ms` +
        (job.retry.jitter > 0 ? `, jitter ${job.retry.jitter}` : ''),
    ],
    ...(job.schedule === null
      ? []
      : ([
          ['start jitter', job.jitterMs === 0 ? 'none' : `${job.jitterMs} ms`],
          ['pause on failure', job.pauseOnFailure ? 'yes' : 'no'],
          ['overlap policy', job.overlapPolicy],
          ...(job.catchupWindowMs === null ? [] : ([['catch-up window', `${job.catchupWindowMs} ms`]] as Array<[string, string]>)),
        ] as Array<[string, string]>)),
    ...(job.pausedReason === null ? [] : ([['paused because', job.pausedReason]] as Array<[string, string]>)),
    ...(job.backfill === null
      ? []
      : ([['backfill', `through ${formatTime(job.backfill.through)}, then resumes at ${formatTime(job.backfill.resumeAt)}`]] as Array<[string, string]>)),
    ['version', String(job.version)],
    ['idempotency key', job.idempotencyKey ?? NONE],
    ['lease generation', String(job.leaseGeneration)],
    ...(job.abort === null
      ? []
      : [['abort', `requested by ${job.abort.requestedBy ?? NONE} at ${formatTime(job.abort.requestedAt)}${job.abort.stopSchedule ? ', schedule ends' : ''}`] as [string, string]]),
    ['created', formatTime(job.createdAt)],
    ['updated', formatTime(job.updatedAt)],
    ['payload', JSON.stringify(job.payload)],
  ];
}
