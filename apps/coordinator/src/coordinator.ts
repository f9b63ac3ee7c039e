/**
 * Wiring only: configuration -> store -> dispatcher, reaper -> gRPC and REST
 * servers. `startCoordinator` returns once both servers listen; `stop()` is
 * the SIGTERM path (tell agents to move, stop claiming, close servers).
 */
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation, service as healthService } from 'grpc-health-check';
import pino, { type Logger } from 'pino';
import {
  AgentService,
  JobService,
  KAIROS_SERVER_OPTIONS,
  TokenService,
  WebhookService,
  addGrpcService,
  reflectionPackageDefinition,
} from '@kairos/proto';
import { createPool, createStore, startEmbeddedPostgres, type EmbeddedPostgres, type RetryPolicy } from '@kairos/store';
import { tracingFromEnv } from '@kairos/tracing';
import { createAuthenticator } from './api/auth';
import { connectHandler } from './api/grpc-agent';
import { jobServiceImplementation } from './api/grpc-jobs';
import { tokenServiceImplementation } from './api/grpc-tokens';
import { webhookServiceImplementation } from './api/grpc-webhooks';
import { jobCommands } from './api/job-commands';
import { createPayloadSchemas } from './api/payload-schemas';
import { COORDINATOR_VERSION } from './api/openapi';
import { createRestServer } from './api/rest';
import { tokenCommands } from './api/token-commands';
import { webhookCommands } from './api/webhook-commands';
import type { CoordinatorOptions, ServerLimits, TlsFiles } from './config';
import { drainSessions } from './dispatch/agent-session';
import { createDispatcher } from './dispatch/dispatcher';
import { createDbClock } from './dispatch/db-clock';
import { createPresence, type Presence } from './dispatch/presence';
import { createRebalancer } from './dispatch/rebalance';
import { createReaper } from './maintenance/reaper';
import { createRetention } from './maintenance/retention';
import { createWebhookSender } from './maintenance/webhooks';
import { createMetrics } from './metrics';
import { grpcServerCredentials, loadPair, watchPair } from './tls';

export interface RunningCoordinator {
  readonly coordinatorId: string;
  /** e.g. http://127.0.0.1:8080 */
  readonly httpUrl: string;
  /** host:port of the gRPC server */
  readonly grpcAddress: string;
  readonly databaseUrl: string;
  readonly logger: Logger;
  stop(): Promise<void>;
}

/**
 * Fields never written to the log, wherever a log line carries them (a second
 * line of defence: no code path logs them on purpose). Errors from the store
 * are scrubbed of SQL parameters at the source (libs/store pg-errors.ts).
 */
const REDACTED_LOG_FIELDS = [
  'databaseUrl',
  'DATABASE_URL',
  '*.databaseUrl',
  'payload',
  '*.payload',
  'secret',
  '*.secret',
  'token',
  '*.token',
  'authorization',
  '*.authorization',
  '*.headers.authorization',
  'password',
  '*.password',
];

export async function startCoordinator(options: CoordinatorOptions, logger?: Logger, env: NodeJS.ProcessEnv = process.env): Promise<RunningCoordinator> {
  // Off unless the OTEL_ environment asks; a bad OTEL_ variable stops the start, named.
  const tracing = tracingFromEnv('kairos-coordinator', COORDINATOR_VERSION, env);
  const log =
    logger ??
    pino({
      level: options.logLevel,
      base: { service: 'kairos-coordinator', coordinatorId: options.coordinatorId },
      redact: { paths: REDACTED_LOG_FIELDS, censor: '[redacted]' },
    });

  let embedded: EmbeddedPostgres | undefined;
  let databaseUrl = options.databaseUrl;
  if (!databaseUrl) {
    const dataDir = path.resolve(options.dataDir);
    log.info({ dataDir }, 'no DATABASE_URL: starting embedded PostgreSQL');
    embedded = await startEmbeddedPostgres({ dataDir, onLog: (line) => log.debug({ postgres: line }) });
    databaseUrl = embedded.url;
  }

  const pool = createPool({ connectionString: databaseUrl, max: options.dbPoolSize, application_name: `kairos-${options.coordinatorId}` });
  const retry: RetryPolicy = { backoffBaseMs: options.retryBaseMs, backoffCapMs: options.retryCapMs };
  const store = createStore(pool, { retry });
  if (options.migrate || embedded) {
    const applied = await migrateWithRetry(store.migrate, log);
    if (applied.length > 0) log.info({ applied }, 'migrations applied');
  } else {
    await waitForSchema(store.pendingMigrations, log);
  }

  const metrics = createMetrics({
    countDueNextMinute: () => store.jobs.countDueWithin(60_000),
    demand: () => store.jobs.demand(options.demandHorizonMs),
    demandHorizonMs: options.demandHorizonMs,
    overdue: (graceMs) => store.jobs.overdue(graceMs),
    agents: () => agentsView.agents(),
  });
  if (tracing.enabled) log.info('tracing on: spans go to the exporter the OTEL_ environment names');
  // Presence publishes when agents come and go; it is made right after the dispatcher it reads.
  let presence: Presence | undefined;
  const dbClock = createDbClock(() => store.clockMs());
  const dispatcher = createDispatcher({
    dbClock,
    store,
    options,
    logger: log.child({ component: 'dispatcher' }),
    metrics,
    onSessionsChanged: () => presence?.poke(),
    tracing,
  });
  presence = createPresence({
    store,
    dispatcher,
    coordinatorId: options.coordinatorId,
    intervalMs: options.presenceIntervalMs,
    logger: log.child({ component: 'presence' }),
    ...(options.rebalance
      ? {
          afterPublish: createRebalancer({
            coordinatorId: options.coordinatorId,
            coordinators: () => store.presence.coordinators(),
            sessions: () => (shuttingDown ? [] : dispatcher.sessions()),
            graceMs: Math.max(options.shutdownGraceMs, options.heartbeatIntervalMs * 3),
            abandonAfterMs: Math.max(60_000, options.leaseMs * 3),
            onMoved: (count) => metrics.agentsRebalanced.inc(count),
            logger: log.child({ component: 'rebalance' }),
          }).check,
        }
      : {}),
  });
  const agentsView = presence;
  const reaper = createReaper({
    store,
    intervalMs: options.reaperIntervalMs,
    misfireThresholdMs: options.misfireThresholdMs,
    logger: log.child({ component: 'reaper' }),
    onSkipped: () => dispatcher.wake(),
    onSkippedOccurrences: (count) => metrics.occurrencesSkipped.inc(count),
    onExpired: (expired) => {
      metrics.leasesExpired.inc(expired.length);
      metrics.runsFinished.inc({ outcome: 'LEASE_EXPIRED' }, expired.length);
      const dead = expired.filter((lease) => lease.state === 'DEAD').length;
      if (dead > 0) metrics.jobsDead.inc(dead);
      dispatcher.forgetExpired(expired);
    },
  });
  const payloadSchemas = createPayloadSchemas({ store, logger: log.child({ component: 'payload-schemas' }) });
  const commands = jobCommands({
    store,
    payloadSchemas,
    onJobsDue: () => dispatcher.wake(),
    onAbort: () => metrics.abortsRequested.inc(),
    onWithdrawal: (result) => metrics.withdrawals.inc({ result }),
    withdrawWaitMs: options.withdrawWaitMs,
    retryDefaults: retry,
    tracing,
  });
  const tokens = tokenCommands(store);
  const webhooks = webhookCommands({ store, allowHosts: options.webhooks.allowHosts });
  const auth = createAuthenticator({
    lookup: (secret) => store.tokens.authenticate(secret),
    insecure: options.insecure,
    cacheMs: options.authCacheMs,
    onRefused: () => metrics.authFailures.inc(),
  });
  let shuttingDown = false;

  const limits = options.limits;
  const grpcServer = new grpc.Server({
    ...KAIROS_SERVER_OPTIONS,
    'grpc.max_concurrent_streams': limits.grpcMaxConcurrentStreams,
    'grpc.max_connection_idle_ms': limits.grpcMaxConnectionIdleMs,
    'grpc.max_receive_message_length': limits.grpcMaxMessageBytes,
  });
  addGrpcService(
    grpcServer,
    JobService,
    jobServiceImplementation({ commands, agents: (namespace) => agentsView.agents(namespace), auth, logger: log.child({ component: 'grpc' }) }),
  );
  addGrpcService(grpcServer, TokenService, tokenServiceImplementation({ tokens, auth, logger: log.child({ component: 'grpc' }) }));
  addGrpcService(grpcServer, WebhookService, webhookServiceImplementation({ webhooks, auth, logger: log.child({ component: 'grpc' }) }));
  addGrpcService(grpcServer, AgentService, {
    connect: connectHandler({
      dispatcher,
      options,
      auth,
      payloadSchemas,
      onSchemaRefused: (count) => metrics.payloadSchemasRefused.inc(count),
      logger: log.child({ component: 'agents' }),
      isShuttingDown: () => shuttingDown,
      tracing,
      dbClock,
    }),
  });
  const health = new HealthImplementation({
    '': 'SERVING',
    'kairos.v1.JobService': 'SERVING',
    'kairos.v1.AgentService': 'SERVING',
    'kairos.v1.TokenService': 'SERVING',
    'kairos.v1.WebhookService': 'SERVING',
  });
  health.addToServer(grpcServer);
  // Reflection lists the health service too (grpcurl list shows grpc.health.v1.Health):
  // its descriptors come with the definition grpc-health-check serves.
  const healthDescriptors = (healthService['Check']?.requestType as { fileDescriptorProtos?: Buffer[] } | undefined)?.fileDescriptorProtos ?? [];
  new ReflectionService({
    ...reflectionPackageDefinition(),
    'grpc.health.v1': { format: 'Protocol Buffer 3 FileDescriptorProto', type: {}, fileDescriptorProtos: healthDescriptors },
  } as never).addToServer(grpcServer);
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync(`${options.host}:${options.grpcPort}`, grpcServerCredentials(options.tls), (error, port) =>
      error ? reject(error) : resolve(port),
    ),
  );

  let stopWatchingCertificate: (() => void) | undefined;
  const rest = createRestServer({
    commands,
    tokens,
    webhooks,
    auth,
    agents: (namespace) => agentsView.agents(namespace),
    metrics,
    logger: log,
    ready: () => store.ping(),
    serverFactory: (handler) => {
      const server = createNodeServer(options.tls, limits, handler);
      if (options.tls && server instanceof https.Server) {
        stopWatchingCertificate = watchPair(options.tls, (pair) => server.setSecureContext(pair), log.child({ component: 'tls' }));
      }
      return server as http.Server;
    },
  });
  await rest.listen({ host: options.host, port: options.httpPort });
  const httpAddress = rest.server.address();
  const httpPort = typeof httpAddress === 'object' && httpAddress ? httpAddress.port : options.httpPort;

  const listener = store.listen(
    { onDue: () => dispatcher.wake(), onAbort: (lease) => dispatcher.revokeAborted(lease), onWithdraw: (lease) => dispatcher.withdraw(lease) },
    { onReconnected: () => log.child({ component: 'listen' }).info('listening for due jobs, aborts and withdrawals again') },
  );
  if (options.preDispatchMs > 0) dbClock.start();
  dispatcher.start();
  agentsView.start();
  reaper.start();
  const retention = createRetention({
    store,
    options: {
      runRetentionMs: options.runRetentionMs,
      jobRetentionMs: options.jobRetentionMs,
      schemaTtlMs: options.taskSchemaTtlMs,
      intervalMs: options.retentionIntervalMs,
    },
    logger: log.child({ component: 'retention' }),
    onDeleted: (table, count) => metrics.retentionDeleted.inc({ table }, count),
  });
  retention.start();
  const webhookSender = createWebhookSender({
    store,
    options: { ...options.webhooks, concurrency: 8, userAgent: `kairos-webhooks/${COORDINATOR_VERSION}` },
    logger: log.child({ component: 'webhooks' }),
    onResult: (result) => metrics.webhookDeliveries.inc({ result }),
  });
  webhookSender.start();
  const insecureWarning = options.insecure ? warnInsecure(log) : undefined;

  const displayHost = options.host === '0.0.0.0' || options.host === '::' ? '127.0.0.1' : options.host;
  const running: RunningCoordinator = {
    coordinatorId: options.coordinatorId,
    httpUrl: `${options.tls ? 'https' : 'http'}://${displayHost}:${httpPort}`,
    grpcAddress: `${displayHost}:${grpcPort}`,
    databaseUrl,
    logger: log,
    async stop() {
      if (shuttingDown) return;
      shuttingDown = true;
      clearInterval(insecureWarning);
      stopWatchingCertificate?.();
      log.info('shutting down: agents are told to move to another coordinator');
      health.setStatus('', 'NOT_SERVING');
      dbClock.stop();
      await dispatcher.stop();
      drainSessions(dispatcher.sessions(), options.shutdownGraceMs);
      await waitUntil(() => dispatcher.sessions().length === 0, options.shutdownGraceMs);
      await agentsView.stop();
      await reaper.stop();
      await retention.stop();
      await webhookSender.stop();
      await listener.stop();
      await new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          grpcServer.forceShutdown();
          resolve();
        }, 1_000);
        grpcServer.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      await rest.close();
      await tracing.shutdown().catch((error: unknown) => log.warn({ err: error }, 'traces not flushed'));
      await store.close();
      if (embedded) await embedded.stop();
      log.info('stopped');
    },
  };
  log.info({ httpUrl: running.httpUrl, grpcAddress: running.grpcAddress, leaseMs: options.leaseMs }, 'coordinator ready');
  return running;
}

/** Coordinators starting together, or before the database: retry until it answers. */
async function migrateWithRetry(migrate: () => Promise<string[]>, log: Logger): Promise<string[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await migrate();
    } catch (error: unknown) {
      if (attempt >= 30) throw error;
      log.warn({ err: error, attempt }, 'database not ready for migrations; retrying');
      await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * attempt)));
    }
  }
}

/**
 * KAIROS_MIGRATE=false: this coordinator runs no DDL. It waits (a startup
 * probe's time) until someone else has applied every migration it knows.
 */
async function waitForSchema(pending: () => Promise<string[]>, log: Logger): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    let missing: string[] | undefined;
    try {
      missing = await pending();
      if (missing.length === 0) return;
    } catch (error: unknown) {
      if (attempt % 10 === 1) log.warn({ err: error, attempt }, 'database not ready; retrying');
    }
    if (missing && attempt % 10 === 1) {
      log.warn({ pending: missing }, 'the schema is not current and KAIROS_MIGRATE=false: waiting for `kairos migrate` to apply the pending migrations');
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(2_000, 100 * attempt)));
  }
}

async function waitUntil(done: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
}

/** The REST server: https with the certificate pair when TLS is configured; bounded either way. */
function createNodeServer(
  tls: TlsFiles | undefined,
  limits: ServerLimits,
  handler: (request: http.IncomingMessage, response: http.ServerResponse) => void,
): http.Server | https.Server {
  const bounded: http.ServerOptions = {
    requestTimeout: limits.httpRequestTimeoutMs,
    headersTimeout: Math.min(limits.httpHeadersTimeoutMs, limits.httpRequestTimeoutMs),
    keepAliveTimeout: limits.httpKeepAliveTimeoutMs,
    // Node checks the two timeouts above on this interval (default 30 s).
    connectionsCheckingInterval: Math.max(100, Math.min(1_000, Math.floor(limits.httpRequestTimeoutMs / 4))),
  };
  const server = tls ? https.createServer({ ...bounded, ...loadPair(tls) }, handler) : http.createServer(bounded, handler);
  server.maxConnections = limits.httpMaxConnections;
  return server;
}

/** --insecure is loud: a warning at start and every five minutes while it runs. */
function warnInsecure(log: Logger): NodeJS.Timeout {
  const warn = () =>
    log.warn('running with --insecure: calls and agent streams without a token are admitted as admin of namespace "default"');
  warn();
  const timer = setInterval(warn, 5 * 60_000);
  timer.unref();
  return timer;
}
