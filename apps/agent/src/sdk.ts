/**
 * The SDK surface for custom task handlers.
 *
 * A handler is an async function `(payload, ctx) => Promise<unknown>`:
 * resolving means success, throwing (or rejecting) means failure. Its return
 * value is ignored. It must honour `ctx.signal`: when the signal aborts, the
 * agent has already decided the run's result and will not wait for the
 * handler (see executor.ts).
 *
 * Execution is at-least-once: the same job can run again after a crash, a
 * lost lease or a timeout, possibly while an earlier attempt is still winding
 * down somewhere. Handlers must be idempotent, and anything they write
 * downstream should carry `ctx.fencingToken` so the receiver can reject a
 * write from an older attempt (higher token wins).
 */
import type { Logger } from 'pino';
import { firstProblem } from '@kairos/tasks';
import { toJSONSchema, type input, type output, type ZodType } from 'zod';

/** Everything a handler learns about its run besides the payload. */
export interface TaskContext {
  /**
   * Aborted when the run must stop: its timeout passed, an operator aborted
   * it, the lease was lost or revoked, the agent's drain grace ran out, or
   * the agent was closed.
   * `signal.reason` is a TaskAbortedError saying which.
   */
  signal: AbortSignal;
  /** Which attempt at this occurrence this is, from 1. */
  attempt: number;
  /** Attempts allowed for this occurrence; attempt === maxAttempts is the last. */
  maxAttempts: number;
  /**
   * The lease generation: a bigint (the wire's uint64), strictly greater for
   * every later claim of the same job. Pass it downstream (as a string, e.g.
   * `String(ctx.fencingToken)`) and let the receiver reject anything older
   * than the newest token it has seen.
   */
  fencingToken: bigint;
  jobId: string;
  runId: string;
  /** The schedule occurrence this run serves (run_at for one-off jobs). */
  scheduledFor: Date;
  /** A child of the agent's logger bound to this run (jobId, runId, attempt, task). */
  logger?: Logger;
  /**
   * The run's W3C trace context (a `traceparent` header value) when the job
   * has one: the agent's run span with tracing on, else the trace its creator
   * sent, passed through. Send it on to join downstream work to the trace
   * (the built-in `http` task does).
   */
  traceparent?: string;
}

/** A task handler. Resolve = succeeded, throw/reject = failed. */
export type TaskHandler = (payload: Record<string, unknown>, ctx: TaskContext) => Promise<unknown>;

/** Why a run's signal was aborted. */
export type AbortKind = 'timeout' | 'aborted' | 'lease-lost' | 'drain-grace' | 'closed';

/** The `reason` of an aborted `ctx.signal`. */
export class TaskAbortedError extends Error {
  override readonly name = 'TaskAbortedError';
  constructor(
    readonly kind: AbortKind,
    message: string,
  ) {
    super(message);
  }
}

/** A payload that does not match its task's schema; `field` is the dotted path of the first problem. */
export class PayloadError extends Error {
  override readonly name = 'PayloadError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Validates a payload with a zod schema; on failure throws a PayloadError
 * naming the first bad field, which the agent reports as a FAILED run.
 */
export function parsePayload<S extends ZodType>(schema: S, payload: Record<string, unknown>): output<S> {
  const parsed = schema.safeParse(payload);
  if (parsed.success) return parsed.data;
  const { path, message } = firstProblem(parsed.error);
  // Named relative to the payload, as handler authors see it ("url", "env.PATH").
  const field = path.length > 0 ? path.join('.') : 'payload';
  throw new PayloadError(field, `invalid payload field "${field}": ${message}`);
}

/** A handler made by defineTask: it carries the JSON Schema its agent advertises. */
export interface DefinedTask extends TaskHandler {
  /** The payload's JSON Schema (draft 2020-12), from the zod schema given to defineTask. */
  readonly payloadJsonSchema: Record<string, unknown>;
}

/**
 * A handler with a declared payload schema (zod):
 *
 *   handlers: {
 *     'send-invoice': defineTask({
 *       payload: z.object({ invoiceId: z.string().uuid(), amountCents: z.number().int().positive() }),
 *       run: async ({ invoiceId, amountCents }, ctx) => { ... },
 *     }),
 *   }
 *
 * The handler gets the parsed, typed payload (a payload that does not parse
 * fails the run naming the field, as parsePayload does). The agent advertises
 * the schema to the coordinator, which then refuses a job whose payload it
 * rejects with a 400 naming the field (`payload.amountCents`) at create and
 * at edit, in the agent's namespace. Schemas only zod itself can check
 * (refinements, transforms) are checked by the handler alone: JSON Schema
 * carries what it can express.
 */
export function defineTask<S extends ZodType<unknown, Record<string, unknown>>>(definition: {
  payload: S;
  run: (payload: output<S>, ctx: TaskContext) => Promise<unknown>;
}): DefinedTask {
  const { payload: schema, run } = definition;
  const payloadJsonSchema = toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  const handler = async (payload: Record<string, unknown>, ctx: TaskContext) => run(parsePayload(schema, payload), ctx);
  return Object.assign(handler, { payloadJsonSchema });
}

/** The payload type a defineTask schema accepts, for callers that build payloads in TypeScript. */
export type PayloadOf<S extends ZodType> = input<S>;

