/**
 * `kairos jobs create-many`: jobs as JSON lines (each line a POST /jobs body)
 * from stdin or a file, sent as CreateJobs batches of up to 1000 with a few
 * batches in flight, answered line by line in input order.
 *
 * A line that is not a JSON object, or that the client or the coordinator
 * refuses, is reported on its own and does not stop the others. A failure of a
 * whole call (coordinator unreachable, credentials) stops the command; the
 * lines answered before it are printed, the rest are named as unconfirmed.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { KairosError, KairosErrorCode, MAX_BATCH_JOBS, type CreateJobInput, type CreateJobsItem, type KairosClient } from '@kairos/client';
import type { Command } from 'commander';
import { globalOptions, withClient } from '../context';
import { EXIT_CODE_FOR, ExitCode, ItemsRefused, UsageError } from '../errors';
import { wholeNumber } from '../flags';
import type { CliIo } from '../io';

interface CreateManyFlags {
  file?: string;
  batchSize: number;
  concurrency: number;
}

/** The fields of a POST /jobs body, which a line may hold. */
const JOB_FIELDS = new Set([
  'task',
  'runAt',
  'schedule',
  'timezone',
  'payload',
  'name',
  'maxAttempts',
  'timeoutSeconds',
  'misfirePolicy',
  'idempotencyKey',
  'retry',
  'jitterMs',
  'pauseOnFailure',
  'overlapPolicy',
  'catchupWindowMs',
]);

/** REST's status and error code for a refusal, so --json lines read like POST /jobs:batch results. */
const REST_REFUSAL: Partial<Record<KairosErrorCode, { status: number; code: string }>> = {
  'invalid-argument': { status: 400, code: 'invalid_argument' },
  'already-exists': { status: 409, code: 'already_exists' },
  'failed-precondition': { status: 409, code: 'failed_precondition' },
  'not-found': { status: 404, code: 'not_found' },
};

interface Line {
  number: number;
  input: CreateJobInput | KairosError;
}

export function registerCreateMany(jobs: Command, io: CliIo): void {
  jobs
    .command('create-many')
    .description('create jobs from JSON lines (one POST /jobs body per line) on stdin, in batches of up to 1000')
    .option('--file <path>', 'read the lines from this file instead of stdin')
    .option('--batch-size <n>', `jobs per CreateJobs call, 1 to ${MAX_BATCH_JOBS}`, wholeNumber(1), MAX_BATCH_JOBS)
    .option('--concurrency <n>', 'calls in flight at once, 1 to 16', wholeNumber(1), 4)
    .action(async (flags: CreateManyFlags, command: Command) => {
      if (flags.batchSize > MAX_BATCH_JOBS) throw new UsageError(`--batch-size is at most ${MAX_BATCH_JOBS}`, '--batch-size');
      if (flags.concurrency > 16) throw new UsageError('--concurrency is at most 16', '--concurrency');
      const globals = globalOptions(command, io);
      const source = flags.file === undefined ? Readable.from(io.stdin) : createReadStream(flags.file);
      const tally = { created: 0, existing: 0, refused: 0, worst: ExitCode.Ok as ExitCode };
      const started = performance.now();

      const report = (line: Line, answer: CreateJobsItem) => {
        if (answer.error === null) {
          if (answer.created) tally.created += 1;
          else tally.existing += 1;
          if (globals.json) {
            const status = answer.created ? 201 : 200;
            io.stdout.write(`${JSON.stringify({ line: line.number, status, jobId: answer.jobId, created: answer.created, error: null })}\n`);
          }
          return;
        }
        tally.refused += 1;
        const exit = EXIT_CODE_FOR[answer.error.code];
        // Invalid input (2) outranks a conflict (4): fix the input first.
        if (tally.worst === ExitCode.Ok || exit === ExitCode.Usage) tally.worst = exit;
        if (globals.json) io.stdout.write(`${JSON.stringify(refusalJson(line.number, answer.error))}\n`);
        else io.stderr.write(`line ${line.number}: ${answer.error.message}${answer.error.field ? ` (field: ${answer.error.field})` : ''}\n`);
      };

      await withClient(globals, async (client) => {
        const inFlight: Array<{ lines: Line[]; answers: Promise<CreateJobsItem[]> }> = [];
        /** Waits for the oldest batch and reports it: answers come out in input order. */
        const settleOldest = async () => {
          const batch = inFlight.shift()!;
          let answers: CreateJobsItem[];
          try {
            answers = await batch.answers;
          } catch (error: unknown) {
            const first = batch.lines[0]?.number ?? 0;
            io.stderr.write(`lines from ${first} on were not confirmed: retrying them is safe with idempotency keys\n`);
            throw error;
          }
          batch.lines.forEach((line, i) => report(line, answers[i]!));
        };
        let pending: Line[] = [];
        const send = async () => {
          const lines = pending;
          pending = [];
          inFlight.push({ lines, answers: sendBatch(client, lines) });
          // Keep the rejection handled until its turn comes: settleOldest reports it in order.
          inFlight[inFlight.length - 1]!.answers.catch(() => undefined);
          if (inFlight.length >= flags.concurrency) await settleOldest();
        };
        let number = 0;
        for await (const text of createInterface({ input: source, crlfDelay: Infinity })) {
          number += 1;
          if (text.trim() === '') continue;
          pending.push({ number, input: parseLine(text) });
          if (pending.length >= flags.batchSize) await send();
        }
        if (pending.length > 0) await send();
        while (inFlight.length > 0) await settleOldest();
      });

      const seconds = (performance.now() - started) / 1000;
      const summary = `created ${tally.created}, existing ${tally.existing}, refused ${tally.refused} in ${seconds.toFixed(1)} s`;
      if (globals.json) io.stderr.write(`${summary}\n`);
      else io.stdout.write(`${summary}\n`);
      if (tally.refused > 0) throw new ItemsRefused(`${tally.refused} line(s) refused`, tally.worst);
    });
}

/** One batch: lines that failed to parse keep their error; the rest go to CreateJobs in one call. */
async function sendBatch(client: KairosClient, lines: Line[]): Promise<CreateJobsItem[]> {
  const inputs = lines.flatMap((line) => (line.input instanceof KairosError ? [] : [line.input]));
  const sent = inputs.length > 0 ? await client.createJobs(inputs) : [];
  let next = 0;
  return lines.map((line) => (line.input instanceof KairosError ? { jobId: null, created: false, error: line.input } : sent[next++]!));
}

/** A line as the client's input: a JSON object with POST /jobs fields (null: absent), or why it is not one. */
function parseLine(text: string): CreateJobInput | KairosError {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error: unknown) {
    return new KairosError(KairosErrorCode.InvalidArgument, `not JSON: ${(error as Error).message}`, { field: 'body' });
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return new KairosError(KairosErrorCode.InvalidArgument, 'each line must be a JSON object (a POST /jobs body)', { field: 'body' });
  }
  const input: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    if (!JOB_FIELDS.has(key)) return new KairosError(KairosErrorCode.InvalidArgument, `unknown field ${JSON.stringify(key)}`, { field: key });
    if (field !== null) input[key] = field;
  }
  // The client checks each field's type and value before sending, item by item.
  return input as unknown as CreateJobInput;
}

function refusalJson(line: number, error: KairosError) {
  const rest = REST_REFUSAL[error.code] ?? { status: 500, code: 'internal' };
  return {
    line,
    status: rest.status,
    jobId: null,
    created: false,
    error: {
      code: rest.code,
      reason: error.reason ?? rest.code.toUpperCase(),
      message: error.message,
      ...(error.field === undefined ? {} : { field: error.field }),
      ...(Object.keys(error.details).length === 0 ? {} : { details: error.details }),
    },
  };
}
