/**
 * Coordinator configuration: environment variables (and matching CLI flags,
 * passed as overrides), parsed once with zod. Durations end in `Ms`.
 */
import os from 'node:os';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';

const port = z.coerce.number().int().min(0).max(65_535);
const positiveMs = z.coerce.number().int().positive();
const flag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no', ''], { error: 'must be true or false' })
  .transform((value) => value === 'true' || value === '1' || value === 'yes');

const schema = z
  .object({
    KAIROS_HOST: z.string().min(1).default('0.0.0.0'),
    KAIROS_HTTP_PORT: port.default(8080),
    KAIROS_GRPC_PORT: port.default(50051),
    DATABASE_URL: z.string().min(1).optional(),
    KAIROS_DATA_DIR: z.string().min(1).default('.kairos'),
    KAIROS_LEASE_MS: positiveMs.min(300).default(10_000),
    KAIROS_REAPER_INTERVAL_MS: positiveMs.optional(),
    KAIROS_POLL_INTERVAL_MS: positiveMs.default(1_000),
    KAIROS_CLAIM_BATCH: positiveMs.max(5_000).default(500),
    KAIROS_MISFIRE_THRESHOLD_MS: positiveMs.default(60_000),
    KAIROS_RETRY_BASE_MS: positiveMs.default(1_000),
    KAIROS_RETRY_CAP_MS: positiveMs.default(3_600_000),
    KAIROS_SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).default(5_000),
    KAIROS_DB_POOL_SIZE: positiveMs.max(200).default(10),
    KAIROS_COORDINATOR_ID: z.string().min(1).optional(),
    KAIROS_INSECURE: flag.default(false),
    KAIROS_AUTH_CACHE_MS: positiveMs.max(30_000).default(2_000),
    KAIROS_AGENT_HELLO_TIMEOUT_MS: positiveMs.default(5_000),
    KAIROS_AGENT_SILENCE_LIMIT_MS: positiveMs.optional(),
    KAIROS_AGENT_QUARANTINE_MS: positiveMs.default(30_000),
    KAIROS_AGENT_QUARANTINE_MAX_MS: positiveMs.default(600_000),
    KAIROS_ABORT_GRACE_MS: positiveMs.max(3_600_000).default(30_000),
    KAIROS_PREDISPATCH_MS: z.coerce.number().int().min(0).max(10_000).default(2_000),
    KAIROS_WITHDRAW_WAIT_MS: positiveMs.max(30_000).default(2_000),
    KAIROS_RUN_RETENTION_MS: z.coerce.number().int().min(0).default(30 * 86_400_000),
    KAIROS_JOB_RETENTION_MS: z.coerce.number().int().min(0).default(30 * 86_400_000),
    KAIROS_RETENTION_INTERVAL_MS: positiveMs.min(100).default(10_000),
    KAIROS_PRESENCE_INTERVAL_MS: positiveMs.min(100).default(5_000),
    KAIROS_REBALANCE: flag.default(true),
    KAIROS_MIGRATE: flag.default(true),
    KAIROS_DEMAND_HORIZON_MS: positiveMs.max(86_400_000).default(300_000),
    KAIROS_WEBHOOK_POLL_MS: positiveMs.min(50).default(1_000),
    KAIROS_WEBHOOK_TIMEOUT_MS: positiveMs.max(300_000).default(10_000),
    KAIROS_WEBHOOK_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(100).default(12),
    KAIROS_WEBHOOK_RETRY_BASE_MS: positiveMs.default(5_000),
    KAIROS_WEBHOOK_RETRY_CAP_MS: positiveMs.default(3_600_000),
    KAIROS_WEBHOOK_ALLOW_HOSTS: z.string().default(''),
    KAIROS_TASK_SCHEMA_TTL_MS: z.coerce.number().int().min(0).default(7 * 86_400_000),
    KAIROS_TLS_CERT: z.string().min(1).optional(),
    KAIROS_TLS_KEY: z.string().min(1).optional(),
    KAIROS_TLS_CLIENT_CA: z.string().min(1).optional(),
    KAIROS_TLS_RELOAD_MS: positiveMs.min(100).default(5_000),
    KAIROS_HTTP_REQUEST_TIMEOUT_MS: positiveMs.default(30_000),
    KAIROS_HTTP_HEADERS_TIMEOUT_MS: positiveMs.default(10_000),
    KAIROS_HTTP_KEEPALIVE_TIMEOUT_MS: positiveMs.default(5_000),
    KAIROS_HTTP_MAX_CONNECTIONS: positiveMs.max(1_000_000).default(1_000),
    KAIROS_GRPC_MAX_CONCURRENT_STREAMS: positiveMs.max(100_000).default(100),
    KAIROS_GRPC_MAX_CONNECTION_IDLE_MS: positiveMs.default(300_000),
    KAIROS_GRPC_MAX_MESSAGE_BYTES: positiveMs.min(65_536).max(64 * 1024 * 1024).default(4 * 1024 * 1024),
    KAIROS_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  })
  .loose();

export interface CoordinatorOptions {
  coordinatorId: string;
  host: string;
  /** 0 picks a free port (tests). */
  httpPort: number;
  grpcPort: number;
  /** Unset: start an embedded PostgreSQL under dataDir. */
  databaseUrl?: string;
  dataDir: string;
  /** Lease length: how long a dead agent's job waits before it can run elsewhere. */
  leaseMs: number;
  /** How often agents heartbeat: a third of the lease, so two can be lost before it expires. */
  heartbeatIntervalMs: number;
  /** How often the reaper looks for expired leases (default a quarter of the lease). */
  reaperIntervalMs: number;
  /** Backstop poll for due jobs, jittered ±20 %; timers and NOTIFY do most of the waking. */
  pollIntervalMs: number;
  /** Most jobs claimed by one statement. */
  claimBatch: number;
  /** A `skip` job later than this is moved to its next occurrence instead of running late. */
  misfireThresholdMs: number;
  retryBaseMs: number;
  retryCapMs: number;
  /** On SIGTERM, how long agents get to move to another coordinator before streams close. */
  shutdownGraceMs: number;
  dbPoolSize: number;
  logLevel: string;
  /**
   * Admit calls and agent streams without a token (as the anonymous admin of
   * namespace `default`). Off unless asked for; logged as a warning at start
   * and every few minutes. Tokens that are sent are still checked.
   */
  insecure: boolean;
  /** How long a token look-up is reused: the longest a revocation takes to reach this coordinator. */
  authCacheMs: number;
  /** An agent stream that has not sent Hello this long after opening is closed. */
  agentHelloTimeoutMs: number;
  /**
   * An agent stream silent this long (no heartbeat) is closed; default three
   * leases, at least 30 s. A silent agent gets no new work long before that
   * (two heartbeat intervals); this frees the stream of a peer that stays
   * connected but says nothing, without cutting off an agent that was only
   * paused for a while and comes back to report.
   */
  agentSilenceLimitMs: number;
  /**
   * How long the holder of an aborted run keeps its lease to stop the handler
   * and report (renewals extend it no further); default 30 s, above the
   * agent's own wait for a handler to stop.
   */
  abortGraceMs: number;
  /**
   * Pre-dispatch look-ahead cap (KAIROS_PREDISPATCH_MS, default 2 s; 0: off):
   * agents that support it are handed jobs due within up to this long, and
   * start them at the due instant. Never more than half the lease.
   */
  preDispatchMs: number;
  /** How long a cancel, pause or edit of a pre-dispatched job waits for the holder to give it back (then 409). */
  withdrawWaitMs: number;
  /** Runs finished longer ago than this are deleted (0 in the environment: kept forever, null here). */
  runRetentionMs: number | null;
  /** COMPLETED and CANCELLED jobs unchanged for longer than this are deleted with their runs (0: kept forever). */
  jobRetentionMs: number | null;
  /** How often the retention loop runs a pass. */
  retentionIntervalMs: number;
  /** How often this coordinator publishes its agents for the cluster-wide view (and at once when one comes or goes). */
  presenceIntervalMs: number;
  /**
   * Ask agents to move to another coordinator when this one serves more than
   * its share (ceil(agents / coordinators)) and another serves at least two
   * fewer; checked after each presence publication (KAIROS_REBALANCE).
   */
  rebalance: boolean;
  /**
   * Apply pending migrations at start (KAIROS_MIGRATE, default true). When
   * false the coordinator never runs DDL: it waits until the schema is
   * current (`kairos migrate`, for example a Helm hook Job with its own
   * credentials) before it serves.
   */
  migrate: boolean;
  /** How far ahead kairos_jobs_demand counts DUE jobs (KAIROS_DEMAND_HORIZON_MS, default 5 min). */
  demandHorizonMs: number;
  /** Webhook deliveries (KAIROS_WEBHOOK_*): docs/operations.md "Webhooks". */
  webhooks: {
    pollMs: number;
    timeoutMs: number;
    maxAttempts: number;
    retryBaseMs: number;
    retryCapMs: number;
    /** Hosts (host or host:port) webhooks may call; empty: any. */
    allowHosts: string[];
  };
  /** SDK payload schemas no agent advertised for this long are forgotten (0: kept forever). */
  taskSchemaTtlMs: number | null;
  /** First quarantine of an agent that takes leases and never renews them; doubles each time. */
  agentQuarantineMs: number;
  /** Longest quarantine. */
  agentQuarantineMaxMs: number;
  /** Serve REST and gRPC over TLS (files re-read every `reloadMs`); unset: plaintext. */
  tls?: TlsFiles;
  limits: ServerLimits;
}

export interface TlsFiles {
  certFile: string;
  keyFile: string;
  /** Require client certificates signed by this CA on gRPC (mTLS). */
  clientCaFile?: string;
  /** How often the files are checked for a new certificate. */
  reloadMs: number;
}

/** Bounds on what one peer can hold on the servers (docs/security.md, "Limits"). */
export interface ServerLimits {
  /** A REST request (headers and body) must arrive within this; else 408. */
  httpRequestTimeoutMs: number;
  /** The request headers must arrive within this. */
  httpHeadersTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  httpKeepAliveTimeoutMs: number;
  /** Open REST connections at once; more are refused. */
  httpMaxConnections: number;
  /** Concurrent gRPC streams (calls) per connection. */
  grpcMaxConcurrentStreams: number;
  /** A gRPC connection without calls is closed after this. */
  grpcMaxConnectionIdleMs: number;
  /** Largest gRPC message received. */
  grpcMaxMessageBytes: number;
}

/** A configuration problem; `field` is the environment variable at fault (the message starts with it). */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`invalid configuration: ${field}: ${detail}`);
  }
}

export function coordinatorOptionsFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<CoordinatorOptions> = {},
): CoordinatorOptions {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(String(issue.path[0]), issue.message);
  }
  const e = parsed.data;
  const leaseMs = overrides.leaseMs ?? e.KAIROS_LEASE_MS;
  const options: CoordinatorOptions = {
    coordinatorId: e.KAIROS_COORDINATOR_ID ?? `${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`,
    host: e.KAIROS_HOST,
    httpPort: e.KAIROS_HTTP_PORT,
    grpcPort: e.KAIROS_GRPC_PORT,
    dataDir: e.KAIROS_DATA_DIR,
    leaseMs,
    heartbeatIntervalMs: Math.max(50, Math.floor(leaseMs / 3)),
    reaperIntervalMs: e.KAIROS_REAPER_INTERVAL_MS ?? Math.max(100, Math.floor(leaseMs / 4)),
    pollIntervalMs: e.KAIROS_POLL_INTERVAL_MS,
    claimBatch: e.KAIROS_CLAIM_BATCH,
    misfireThresholdMs: e.KAIROS_MISFIRE_THRESHOLD_MS,
    retryBaseMs: e.KAIROS_RETRY_BASE_MS,
    retryCapMs: e.KAIROS_RETRY_CAP_MS,
    shutdownGraceMs: e.KAIROS_SHUTDOWN_GRACE_MS,
    dbPoolSize: e.KAIROS_DB_POOL_SIZE,
    logLevel: e.KAIROS_LOG_LEVEL,
    insecure: e.KAIROS_INSECURE,
    authCacheMs: e.KAIROS_AUTH_CACHE_MS,
    agentHelloTimeoutMs: e.KAIROS_AGENT_HELLO_TIMEOUT_MS,
    agentSilenceLimitMs: e.KAIROS_AGENT_SILENCE_LIMIT_MS ?? Math.max(3 * leaseMs, 30_000),
    agentQuarantineMs: e.KAIROS_AGENT_QUARANTINE_MS,
    abortGraceMs: e.KAIROS_ABORT_GRACE_MS,
    preDispatchMs: Math.min(e.KAIROS_PREDISPATCH_MS, Math.floor(leaseMs / 2)),
    withdrawWaitMs: e.KAIROS_WITHDRAW_WAIT_MS,
    runRetentionMs: e.KAIROS_RUN_RETENTION_MS === 0 ? null : e.KAIROS_RUN_RETENTION_MS,
    jobRetentionMs: e.KAIROS_JOB_RETENTION_MS === 0 ? null : e.KAIROS_JOB_RETENTION_MS,
    retentionIntervalMs: e.KAIROS_RETENTION_INTERVAL_MS,
    presenceIntervalMs: e.KAIROS_PRESENCE_INTERVAL_MS,
    rebalance: e.KAIROS_REBALANCE,
    migrate: e.KAIROS_MIGRATE,
    demandHorizonMs: e.KAIROS_DEMAND_HORIZON_MS,
    webhooks: {
      pollMs: e.KAIROS_WEBHOOK_POLL_MS,
      timeoutMs: e.KAIROS_WEBHOOK_TIMEOUT_MS,
      maxAttempts: e.KAIROS_WEBHOOK_MAX_ATTEMPTS,
      retryBaseMs: e.KAIROS_WEBHOOK_RETRY_BASE_MS,
      retryCapMs: Math.max(e.KAIROS_WEBHOOK_RETRY_CAP_MS, e.KAIROS_WEBHOOK_RETRY_BASE_MS),
      allowHosts: e.KAIROS_WEBHOOK_ALLOW_HOSTS.split(',').map((host) => host.trim()).filter((host) => host !== ''),
    },
    taskSchemaTtlMs: e.KAIROS_TASK_SCHEMA_TTL_MS === 0 ? null : e.KAIROS_TASK_SCHEMA_TTL_MS,
    agentQuarantineMaxMs: Math.max(e.KAIROS_AGENT_QUARANTINE_MAX_MS, e.KAIROS_AGENT_QUARANTINE_MS),
    ...tlsFiles(e),
    limits: {
      httpRequestTimeoutMs: e.KAIROS_HTTP_REQUEST_TIMEOUT_MS,
      httpHeadersTimeoutMs: e.KAIROS_HTTP_HEADERS_TIMEOUT_MS,
      httpKeepAliveTimeoutMs: e.KAIROS_HTTP_KEEPALIVE_TIMEOUT_MS,
      httpMaxConnections: e.KAIROS_HTTP_MAX_CONNECTIONS,
      grpcMaxConcurrentStreams: e.KAIROS_GRPC_MAX_CONCURRENT_STREAMS,
      grpcMaxConnectionIdleMs: e.KAIROS_GRPC_MAX_CONNECTION_IDLE_MS,
      grpcMaxMessageBytes: e.KAIROS_GRPC_MAX_MESSAGE_BYTES,
    },
    ...(e.DATABASE_URL ? { databaseUrl: e.DATABASE_URL } : {}),
    ...stripUndefined(overrides),
  };
  return options;
}

function tlsFiles(e: z.infer<typeof schema>): { tls?: TlsFiles } {
  if (e.KAIROS_TLS_CERT === undefined && e.KAIROS_TLS_KEY === undefined) {
    if (e.KAIROS_TLS_CLIENT_CA !== undefined) {
      throw new ConfigError('KAIROS_TLS_CLIENT_CA', 'needs KAIROS_TLS_CERT and KAIROS_TLS_KEY (mTLS is TLS first)');
    }
    return {};
  }
  if (e.KAIROS_TLS_CERT === undefined || e.KAIROS_TLS_KEY === undefined) {
    const missing = e.KAIROS_TLS_CERT === undefined ? 'KAIROS_TLS_CERT' : 'KAIROS_TLS_KEY';
    throw new ConfigError(missing, 'TLS needs both KAIROS_TLS_CERT and KAIROS_TLS_KEY');
  }
  return {
    tls: {
      certFile: e.KAIROS_TLS_CERT,
      keyFile: e.KAIROS_TLS_KEY,
      ...(e.KAIROS_TLS_CLIENT_CA === undefined ? {} : { clientCaFile: e.KAIROS_TLS_CLIENT_CA }),
      reloadMs: e.KAIROS_TLS_RELOAD_MS,
    },
  };
}

function stripUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
