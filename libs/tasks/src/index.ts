/**
 * @kairos/tasks: the payload contracts of the built-in tasks (`sleep`, `http`,
 * `exec`), in one place for both sides: the agent parses payloads with them
 * before running a task, and the coordinator checks a new job's payload with
 * them, so a payload the task would refuse is a 400 naming the field at
 * create time, not a run that fails three times and goes DEAD.
 *
 * These are shape checks only. What depends on an agent's configuration (the
 * http host allow-list, the exec program allow-list and cwd root) is judged by
 * the agent that runs the job.
 */
import { z, type ZodError, type ZodType } from 'zod';

/** A week: long enough for any demo, short enough to catch a unit mix-up (ms for s). */
const MAX_SLEEP_SECONDS = 7 * 24 * 3600;

export const sleepPayload = z.strictObject({ seconds: z.number().min(0).max(MAX_SLEEP_SECONDS) });

/** Methods whose requests carry no body. */
const BODYLESS_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

export const httpPayload = z
  .strictObject({
    url: z.string().min(1),
    method: z
      .string()
      .regex(/^[A-Za-z]+$/, 'must be an HTTP method name')
      .transform((method) => method.toUpperCase())
      .default('POST'),
    headers: z.record(z.string(), z.string()).optional(),
    body: z.union([z.string(), z.record(z.string(), z.unknown()), z.array(z.unknown())]).optional(),
    timeoutMs: z.number().int().positive().optional(),
  })
  .refine((payload) => payload.body === undefined || !BODYLESS_METHODS.has(payload.method), {
    message: 'a GET or HEAD request cannot have a body',
    path: ['body'],
  });

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * Names an exec payload may not set: they choose what code runs (the search
 * path, the dynamic loader, interpreters' start-up hooks) rather than
 * configure it.
 */
const FORBIDDEN_ENV: readonly RegExp[] = [
  /^PATH$/,
  /^LD_/,
  /^DYLD_/,
  /^KAIROS_/,
  /^(NODE_OPTIONS|NODE_PATH|NODE_EXTRA_CA_CERTS)$/,
  /^PYTHON(PATH|HOME|STARTUP|INSPECT)$/,
  /^(PERL5LIB|PERL5OPT|PERLLIB|RUBYLIB|RUBYOPT|GEM_PATH|GEM_HOME)$/,
  /^(JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|CLASSPATH)$/,
  /^(BASH_ENV|ENV|SHELLOPTS|BASHOPTS|IFS|PS4|PROMPT_COMMAND)$/,
  /^(GCONV_PATH|LOCPATH|NLSPATH|MALLOC_.*|GLIBC_TUNABLES|HOSTALIASES|RESOLV_HOST_CONF)$/,
];

export const execPayload = z.strictObject({
  argv: z.array(z.string().refine((arg) => !arg.includes('\0'), 'must not contain NUL')).min(1, 'must name the program to run'),
  env: z
    .record(
      z
        .string()
        .regex(ENV_NAME, 'names must be letters, digits and _ (not starting with a digit)')
        .refine((name) => !FORBIDDEN_ENV.some((re) => re.test(name)), {
          message: 'may not set PATH, KAIROS_*, or loader/interpreter variables (LD_*, DYLD_*, NODE_OPTIONS, PYTHONPATH, BASH_ENV, ...)',
        }),
      z.string().refine((value) => !value.includes('\0'), 'values must not contain NUL'),
    )
    .optional(),
  cwd: z.string().min(1).optional(),
});

/** The payload schema of each built-in task. */
export const BUILTIN_PAYLOADS: Readonly<Record<string, ZodType>> = { sleep: sleepPayload, http: httpPayload, exec: execPayload };

/** What is wrong with a payload: the dotted field path under `payload` and the reason. */
export interface PayloadProblem {
  /** `payload.seconds`, `payload.env.PATH`, or `payload` for the whole object. */
  field: string;
  message: string;
}

/**
 * The first issue of a failed parse: its path inside the payload (empty for
 * the payload as a whole) and the reason.
 */
export function firstProblem(error: ZodError): { path: string[]; message: string } {
  const issue = error.issues[0];
  if (issue === undefined) return { path: [], message: 'invalid payload' };
  const path = issue.path.map(String);
  // An unknown key is reported at its parent; name the key itself.
  if (issue.code === 'unrecognized_keys' && issue.keys[0] !== undefined) path.push(issue.keys[0]);
  return { path, message: issue.code === 'unrecognized_keys' ? 'unknown field' : issue.message };
}

/** The first problem of `payload` under `schema`, or null when it passes. */
export function payloadProblem(schema: ZodType, payload: unknown): PayloadProblem | null {
  const parsed = schema.safeParse(payload);
  if (parsed.success) return null;
  const { path, message } = firstProblem(parsed.error);
  return { field: ['payload', ...path].join('.'), message };
}

/** For a built-in task, the first problem of its payload; null for a valid payload or any other task. */
export function builtinPayloadProblem(task: string, payload: unknown): PayloadProblem | null {
  const schema = BUILTIN_PAYLOADS[task];
  return schema === undefined ? null : payloadProblem(schema, payload);
}
