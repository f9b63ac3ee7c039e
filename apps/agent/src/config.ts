/**
 * Agent configuration: environment variables (and programmatic overrides)
 * parsed once with zod. Durations are milliseconds and named `...Ms`.
 *
 *   KAIROS_COORDINATOR        host:port of a coordinator     127.0.0.1:50051
 *   KAIROS_AGENT_ID           unique agent id                 <hostname>-<pid>
 *   KAIROS_AGENT_TASKS        comma list of served tasks      every registered handler
 *   KAIROS_AGENT_CAPACITY     runs at once                    4
 *   KAIROS_PREDISPATCH_QUEUE  pre-dispatched leases held      32 x capacity, at most 10000
 *                             beyond capacity (0: none)
 *   KAIROS_TOKEN              bearer token for the stream     (none)
 *   KAIROS_TLS                TLS with the system's roots     false
 *   KAIROS_TLS_CA             PEM file: CA to trust (TLS)     (none)
 *   KAIROS_TLS_CLIENT_CERT    PEM file: client cert (mTLS)    (none)
 *   KAIROS_TLS_CLIENT_KEY     PEM file: client key (mTLS)     (none)
 *   KAIROS_HTTP_ALLOW_HOSTS   comma list, host or host:port   (empty: http refuses all)
 *   KAIROS_EXEC_ALLOW         comma list of absolute paths    (empty: exec disabled)
 *   KAIROS_EXEC_CWD_ROOT      folder exec payloads' cwd is in (none: payloads may not set cwd)
 *   KAIROS_DRAIN_GRACE_MS     SIGTERM grace for running jobs  30000
 *   KAIROS_ABORT_GRACE_MS     an aborted run's time to stop   10000
 *   KAIROS_EXEC_KILL_GRACE_MS exec: SIGTERM to SIGKILL        5000
 *   KAIROS_TRUST_MARGIN_MS    self-fence safety margin        max(200, 10% of the lease)
 *   KAIROS_AGENT_HEALTH_PORT  HTTP /livez and /readyz port    (none: not served; 0 picks one)
 *   KAIROS_AGENT_HEALTH_HOST  address the health port binds   0.0.0.0
 *
 * An empty variable counts as unset. A bad value is an Error naming the
 * variable (or the option, for an override).
 */
import { hostname } from 'node:os';
import { isAbsolute } from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Tracing } from '@kairos/tracing';
import type { TaskHandler } from './sdk';
import { builtinHandlers } from './tasks/builtins';

/** Reported in Hello. */
export const AGENT_VERSION = '0.1.0';

export interface AgentOptions {
  /** host:port of a coordinator (KAIROS_COORDINATOR, default 127.0.0.1:50051). */
  coordinator: string;
  /** KAIROS_AGENT_ID, default `${hostname}-${pid}`. */
  agentId: string;
  /** KAIROS_AGENT_TASKS, default: names of the registered handlers. */
  tasks: string[];
  /** KAIROS_AGENT_CAPACITY, default 4. */
  capacity: number;
  /**
   * KAIROS_PREDISPATCH_QUEUE: how many pre-dispatched leases (jobs not yet
   * due) the agent holds beyond its capacity, to start at their due instant
   * as slots free up; when the queue stops moving (no slot frees for half a
   * second) the leases in it are given back. Default 32 x capacity (at most
   * 10,000); 0: none.
   */
  preDispatchQueue?: number;
  /** KAIROS_TOKEN: sent as `authorization: Bearer <token>` metadata. */
  token?: string;
  /**
   * TLS to the coordinator (KAIROS_TLS, KAIROS_TLS_CA, KAIROS_TLS_CLIENT_CERT,
   * KAIROS_TLS_CLIENT_KEY): PEM files, read at start. Unset: plaintext.
   */
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
  /** Custom SDK handlers, merged over the built-ins (same name wins). */
  handlers?: Record<string, TaskHandler>;
  /** KAIROS_HTTP_ALLOW_HOSTS: host or host:port entries; empty = the http task refuses every URL. */
  httpAllowHosts: string[];
  /** KAIROS_EXEC_ALLOW: allowed programs (argv[0]), absolute paths; empty = exec disabled and not advertised. */
  execAllow: string[];
  /** KAIROS_EXEC_CWD_ROOT: an exec payload's `cwd` must lie under it; unset = payloads may not set one. */
  execCwdRoot?: string;
  /** KAIROS_DRAIN_GRACE_MS, default 30000. */
  drainGraceMs: number;
  /**
   * KAIROS_ABORT_GRACE_MS, default 10000: how long a handler an operator
   * aborted has to stop before the run is reported CANCELLED anyway. Keep it
   * under the coordinator's KAIROS_ABORT_GRACE_MS (30 s), past which the
   * lease is no longer extended.
   */
  abortGraceMs?: number | undefined;
  /** KAIROS_EXEC_KILL_GRACE_MS, default 5000: an aborted exec child's time between SIGTERM and SIGKILL. */
  execKillGraceMs?: number | undefined;
  /** KAIROS_TRUST_MARGIN_MS; default max(200, 10% of lease_ms). */
  trustMarginMs?: number;
  /**
   * KAIROS_AGENT_HEALTH_PORT / KAIROS_AGENT_HEALTH_HOST: serve `GET /livez`
   * (the process answers) and `GET /readyz` (a coordinator welcomed the stream
   * and the agent is not draining) over HTTP, for probes. Unset: not served.
   */
  health?: { port: number; host: string };
  /**
   * Spans for runs (libs/tracing). Default: as the OTEL_ environment says
   * (off unless it names an exporter or an OTLP endpoint).
   */
  tracing?: Tracing;
  logger?: Logger;
}

/** A configuration problem; `field` is the env variable or option at fault. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
  }
}

const MAX_CAPACITY = 10_000;
const MAX_PREDISPATCH_QUEUE = 10_000;

/** The start queue an agent announces when none is configured: 32 x capacity, at most 10,000. */
export function defaultPreDispatchQueue(capacity: number): number {
  return Math.min(MAX_PREDISPATCH_QUEUE, capacity * 32);
}

/** host:port, [ipv6]:port, or a grpc-js target with a scheme (dns:, unix:, ipv4:, ...). */
const coordinatorTarget = z
  .string()
  .trim()
  .refine((value) => /^(\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+):\d{1,5}$/.test(value) || /^[a-z][a-z0-9+.-]*:\S+$/.test(value), {
    message: 'must be host:port (or a gRPC target such as dns:///host:port)',
  });

const commaList = z.string().transform((value) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== ''),
);

const intString = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const envSchema = z.object({
  KAIROS_COORDINATOR: coordinatorTarget.default('127.0.0.1:50051'),
  KAIROS_AGENT_ID: z.string().trim().min(1).max(200).optional(),
  KAIROS_AGENT_TASKS: commaList.optional(),
  KAIROS_AGENT_CAPACITY: intString(1, MAX_CAPACITY).default(4),
  KAIROS_PREDISPATCH_QUEUE: intString(0, MAX_PREDISPATCH_QUEUE).optional(),
  KAIROS_TOKEN: z.string().trim().min(1).optional(),
  KAIROS_TLS: z.enum(['true', 'false', '1', '0'], { error: 'must be true or false' }).optional(),
  KAIROS_TLS_CA: z.string().trim().min(1).optional(),
  KAIROS_TLS_CLIENT_CERT: z.string().trim().min(1).optional(),
  KAIROS_TLS_CLIENT_KEY: z.string().trim().min(1).optional(),
  KAIROS_HTTP_ALLOW_HOSTS: commaList.default([]),
  KAIROS_EXEC_ALLOW: commaList
    .refine((programs) => programs.every((program) => isAbsolute(program)), 'entries must be absolute paths (e.g. /usr/bin/backup)')
    .default([]),
  KAIROS_EXEC_CWD_ROOT: z.string().trim().min(1).optional(),
  KAIROS_DRAIN_GRACE_MS: intString(0, 24 * 3600 * 1000).default(30_000),
  KAIROS_ABORT_GRACE_MS: intString(0, 3600 * 1000).optional(),
  KAIROS_EXEC_KILL_GRACE_MS: intString(0, 3600 * 1000).optional(),
  KAIROS_TRUST_MARGIN_MS: intString(0, 3600 * 1000).optional(),
  KAIROS_AGENT_HEALTH_PORT: intString(0, 65_535).optional(),
  KAIROS_AGENT_HEALTH_HOST: z.string().trim().min(1).default('0.0.0.0'),
});

const optionsSchema = z.object({
  coordinator: coordinatorTarget,
  agentId: z.string().trim().min(1).max(200),
  tasks: z
    .array(z.string().trim().min(1))
    .min(1, 'must name at least one task')
    .refine((tasks) => new Set(tasks).size === tasks.length, 'must not repeat a task'),
  capacity: z.number().int().min(1).max(MAX_CAPACITY),
  preDispatchQueue: z.number().int().min(0).max(MAX_PREDISPATCH_QUEUE).optional(),
  token: z.string().min(1).optional(),
  tls: z
    .object({ caFile: z.string().min(1).optional(), certFile: z.string().min(1).optional(), keyFile: z.string().min(1).optional() })
    .refine((tls) => (tls.certFile === undefined) === (tls.keyFile === undefined), 'mutual TLS needs both a client certificate and its key')
    .optional(),
  handlers: z.record(z.string(), z.custom<TaskHandler>((value) => typeof value === 'function', 'must be a function')).optional(),
  httpAllowHosts: z.array(z.string().trim().min(1)),
  execAllow: z.array(z.string().min(1).refine((program) => isAbsolute(program), 'entries must be absolute paths (e.g. /usr/bin/backup)')),
  execCwdRoot: z.string().min(1).refine((root) => isAbsolute(root), 'must be an absolute path').optional(),
  drainGraceMs: z.number().int().min(0),
  abortGraceMs: z.number().int().min(0).optional(),
  execKillGraceMs: z.number().int().min(0).optional(),
  trustMarginMs: z.number().int().min(0).optional(),
  health: z.object({ port: z.number().int().min(0).max(65_535), host: z.string().min(1) }).optional(),
  tracing: z.custom<Tracing>((value) => typeof value === 'object' && value !== null && 'startSpan' in value, 'must be a Tracing').optional(),
  logger: z.custom<Logger>((value) => typeof value === 'object' && value !== null).optional(),
});

/** Which env variable fills each option (for error messages). */
const ENV_NAMES: Partial<Record<keyof AgentOptions, string>> = {
  coordinator: 'KAIROS_COORDINATOR',
  agentId: 'KAIROS_AGENT_ID',
  tasks: 'KAIROS_AGENT_TASKS',
  capacity: 'KAIROS_AGENT_CAPACITY',
  preDispatchQueue: 'KAIROS_PREDISPATCH_QUEUE',
  token: 'KAIROS_TOKEN',
  tls: 'KAIROS_TLS_CA / KAIROS_TLS_CLIENT_CERT / KAIROS_TLS_CLIENT_KEY',
  httpAllowHosts: 'KAIROS_HTTP_ALLOW_HOSTS',
  execAllow: 'KAIROS_EXEC_ALLOW',
  execCwdRoot: 'KAIROS_EXEC_CWD_ROOT',
  drainGraceMs: 'KAIROS_DRAIN_GRACE_MS',
  abortGraceMs: 'KAIROS_ABORT_GRACE_MS',
  execKillGraceMs: 'KAIROS_EXEC_KILL_GRACE_MS',
  trustMarginMs: 'KAIROS_TRUST_MARGIN_MS',
  health: 'KAIROS_AGENT_HEALTH_PORT',
};

/** Every handler the agent would register: built-ins for its allow-lists, then custom ones. */
export function registeredHandlers(
  options: Pick<AgentOptions, 'handlers' | 'httpAllowHosts' | 'execAllow' | 'execCwdRoot' | 'execKillGraceMs'>,
): Record<string, TaskHandler> {
  return { ...builtinHandlers(options), ...(options.handlers ?? {}) };
}

/**
 * Reads the agent's configuration from `env`; `overrides` (e.g. CLI flags,
 * custom handlers, a logger) win over the environment.
 */
export function agentOptionsFromEnv(env: NodeJS.ProcessEnv = process.env, overrides: Partial<AgentOptions> = {}): AgentOptions {
  const relevant: Record<string, string | undefined> = {};
  for (const name of Object.keys(envSchema.shape)) {
    const value = env[name];
    relevant[name] = value === undefined || value.trim() === '' ? undefined : value;
  }
  const parsed = envSchema.safeParse(relevant);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const name = String(issue?.path[0] ?? 'environment');
    const shown = name === 'KAIROS_TOKEN' ? '(hidden)' : JSON.stringify(relevant[name]);
    throw new ConfigError(name, `${issue?.message ?? 'invalid'} (got ${shown})`);
  }
  const fromEnv = parsed.data;
  const defined = Object.fromEntries(Object.entries(overrides).filter(([, value]) => value !== undefined)) as Partial<AgentOptions>;
  const base: Omit<AgentOptions, 'tasks'> = {
    coordinator: fromEnv.KAIROS_COORDINATOR,
    agentId: fromEnv.KAIROS_AGENT_ID ?? `${hostname()}-${process.pid}`,
    capacity: fromEnv.KAIROS_AGENT_CAPACITY,
    ...(fromEnv.KAIROS_PREDISPATCH_QUEUE === undefined ? {} : { preDispatchQueue: fromEnv.KAIROS_PREDISPATCH_QUEUE }),
    httpAllowHosts: fromEnv.KAIROS_HTTP_ALLOW_HOSTS,
    execAllow: fromEnv.KAIROS_EXEC_ALLOW,
    drainGraceMs: fromEnv.KAIROS_DRAIN_GRACE_MS,
    ...(fromEnv.KAIROS_TOKEN === undefined ? {} : { token: fromEnv.KAIROS_TOKEN }),
    ...tlsFromEnv(fromEnv),
    ...(fromEnv.KAIROS_EXEC_CWD_ROOT === undefined ? {} : { execCwdRoot: fromEnv.KAIROS_EXEC_CWD_ROOT }),
    ...(fromEnv.KAIROS_TRUST_MARGIN_MS === undefined ? {} : { trustMarginMs: fromEnv.KAIROS_TRUST_MARGIN_MS }),
    ...(fromEnv.KAIROS_ABORT_GRACE_MS === undefined ? {} : { abortGraceMs: fromEnv.KAIROS_ABORT_GRACE_MS }),
    ...(fromEnv.KAIROS_EXEC_KILL_GRACE_MS === undefined ? {} : { execKillGraceMs: fromEnv.KAIROS_EXEC_KILL_GRACE_MS }),
    ...(fromEnv.KAIROS_AGENT_HEALTH_PORT === undefined ? {} : { health: { port: fromEnv.KAIROS_AGENT_HEALTH_PORT, host: fromEnv.KAIROS_AGENT_HEALTH_HOST } }),
    ...defined,
  };
  if (base.execAllow.some((program) => !isAbsolute(program))) {
    throw new ConfigError(sources(defined).has('execAllow') ? 'execAllow' : 'KAIROS_EXEC_ALLOW', 'entries must be absolute paths (e.g. /usr/bin/backup)');
  }
  const tasks = defined.tasks ?? fromEnv.KAIROS_AGENT_TASKS ?? Object.keys(registeredHandlers(base)).sort();
  const given = sources(defined);
  return checkAgentOptions({ ...base, tasks }, (field) => (given.has(field) ? field : (ENV_NAMES[field] ?? field)));
}

function sources(defined: Partial<AgentOptions>): Set<string> {
  return new Set(Object.keys(defined));
}

function tlsFromEnv(env: z.infer<typeof envSchema>): Pick<AgentOptions, 'tls'> {
  const files = {
    ...(env.KAIROS_TLS_CA === undefined ? {} : { caFile: env.KAIROS_TLS_CA }),
    ...(env.KAIROS_TLS_CLIENT_CERT === undefined ? {} : { certFile: env.KAIROS_TLS_CLIENT_CERT }),
    ...(env.KAIROS_TLS_CLIENT_KEY === undefined ? {} : { keyFile: env.KAIROS_TLS_CLIENT_KEY }),
  };
  const on = env.KAIROS_TLS === 'true' || env.KAIROS_TLS === '1' || Object.keys(files).length > 0;
  return on ? { tls: files } : {};
}

/**
 * Validates options built by hand (startAgent calls this too): every field's
 * shape, and that each task has a handler. `label` names a field in errors.
 */
export function checkAgentOptions(options: AgentOptions, label: (field: keyof AgentOptions) => string = (field) => field): AgentOptions {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = String(issue?.path[0] ?? 'options') as keyof AgentOptions;
    const where = issue !== undefined && issue.path.length > 1 ? ` (at ${issue.path.slice(1).map(String).join('.')})` : '';
    throw new ConfigError(label(field), `${issue?.message ?? 'invalid'}${where}`);
  }
  const handlers = registeredHandlers(options);
  for (const task of options.tasks) {
    if (handlers[task] !== undefined) continue;
    if (task === 'exec') {
      throw new ConfigError(label('tasks'), `task "exec" is disabled because the exec allow-list (KAIROS_EXEC_ALLOW) is empty`);
    }
    throw new ConfigError(label('tasks'), `no handler for task "${task}" (registered: ${Object.keys(handlers).sort().join(', ')})`);
  }
  return { ...options, tasks: [...options.tasks] };
}
