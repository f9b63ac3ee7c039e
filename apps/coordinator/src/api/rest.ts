/**
 * The JSON REST API (docs/api.md), on fastify. Handlers parse, call
 * job-commands and render; every error goes through errors.ts.
 *
 * Every route but the probes and /metrics authenticates the caller first
 * (auth.ts) and then checks the permission the route needs; the namespace a
 * call works in is always the caller's token's, never a request field.
 */
import type { Server } from 'node:http';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerFactoryHandler,
} from 'fastify';
import type { Logger } from 'pino';
import type { AgentView } from './views';
import type { Metrics } from '../metrics';
import { authorize, type Authenticator, type Permission, type Principal } from './auth';
import { ApiError, ERROR_TABLE, errorBody, toApiError } from './errors';
import type { BatchItemResult, JobCommands } from './job-commands';
import type { TokenCommands } from './token-commands';
import type { WebhookCommands } from './webhook-commands';
import { openApiDocument } from './openapi';
import { CONSOLE_ROUTES, registerConsole } from './console';
import { registerWhoami } from './whoami';
import { LIMITS, parseCreateJobs, queryValue } from './validation';

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the authentication hook on every non-public route. */
    principal: Principal | null;
  }
}

/**
 * Routes anyone may call: probes for the orchestrator, the Prometheus scrape (counts only, no job data), the API's
 * description and the web console's static files (no data: the console's API calls carry the operator's token).
 */
const PUBLIC_ROUTES = new Set<string>(['/healthz', '/readyz', '/metrics', '/openapi.json', ...CONSOLE_ROUTES]);

export function createRestServer(deps: {
  commands: JobCommands;
  tokens: TokenCommands;
  webhooks: WebhookCommands;
  auth: Authenticator;
  /** The agents of a namespace, cluster-wide (dispatch/presence.ts). */
  agents: (namespace: string) => Promise<AgentView[]>;
  metrics: Metrics;
  logger: Logger;
  ready: () => Promise<boolean>;
  /** Where the web console's built files are (default: dist/ui beside this module). */
  consoleDir?: string;
  /** Makes the Node server (http or https, with its timeouts and connection cap). */
  serverFactory?: (handler: FastifyServerFactoryHandler) => Server;
}): FastifyInstance {
  const { commands, logger } = deps;
  const app = Fastify({
    ...(deps.serverFactory ? { serverFactory: deps.serverFactory } : {}),
    // Per-request lines are logged at info by fastify; keep them out of the JSON log.
    loggerInstance: logger.child({ component: 'rest' }, { level: 'warn' }) as FastifyBaseLogger,
    // Generous for the body envelope; the payload itself is capped at LIMITS.payloadBytes.
    bodyLimit: LIMITS.bodyBytes,
    // A malformed URL or an over-long path parameter (e.g. a 300-character job id) is refused
    // by the router before any route runs: answer in the project's error shape all the same.
    frameworkErrors: (error, _request, reply) => {
      const long = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
      return send(
        reply,
        new ApiError('invalid_argument', long ? 'a path parameter is too long (a job id is 36 characters)' : 'the URL is malformed'),
        long ? 414 : 400,
      );
    },
  });

  app.setErrorHandler((error, request, reply) => {
    // A method fastify parses bodies for (e.g. QUERY) on a path without that method: the route answer, not the body's.
    if (request.is404) return noRoute(request, reply);
    const framework = frameworkError(error, request.routeOptions.bodyLimit);
    if (framework) return send(reply, framework.error, framework.status);
    return send(reply, toApiError(error, (cause) => logger.error({ err: cause }, 'request failed')));
  });
  // A path that exists with another method is a 405 naming the methods it has (Allow), not a 404.
  const routes: { pattern: RegExp; method: string }[] = [];
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    // Parameters (`:id`) match any segment; an escaped colon (`::`) is a literal one.
    const literal = route.url.split('::').map((part) => part.replace(/:[^/]+/g, '[^/]+'));
    const pattern = new RegExp(`^${literal.join(':')}$`);
    for (const method of methods) routes.push({ pattern, method });
  });
  const noRoute = (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = [...new Set(routes.filter((route) => route.pattern.test(path)).map((route) => route.method))];
    if (allowed.length > 0) {
      return send(
        reply.header('allow', allowed.join(', ')),
        new ApiError('invalid_argument', `${request.method} is not allowed on ${path}; allowed: ${allowed.join(', ')}`, undefined, undefined, 'METHOD_NOT_ALLOWED'),
        405,
      );
    }
    return send(reply, new ApiError('not_found', `no route ${request.method} ${path}`));
  };
  app.setNotFoundHandler(noRoute);

  app.decorateRequest('principal', null);
  app.addHook('onRequest', async (request) => {
    if (PUBLIC_ROUTES.has(request.routeOptions.url ?? '')) return;
    request.principal = await deps.auth.authenticate(request.headers.authorization);
  });
  /** The caller, once it is known to hold `permission`. */
  const callerWith = (request: FastifyRequest, permission: Permission): Principal => {
    const principal = request.principal;
    if (principal === null) throw new ApiError('unauthenticated', 'a bearer token is required');
    authorize(principal, permission);
    return principal;
  };
  /** The caller's namespace, once it is known to hold `permission`. */
  const namespaceFor = (request: FastifyRequest, permission: Permission): string => callerWith(request, permission).namespace;

  app.post('/jobs', async (request, reply) => {
    const result = await commands.create(namespaceFor(request, 'write'), request.body, traceparentOf(request.headers));
    return reply.code(result.created ? 201 : 200).send({ jobId: result.job.jobId, created: result.created, job: result.job });
  });
  // `::` is fastify's escaped colon: the path is /jobs:batch (AIP-136 custom method style).
  app.post('/jobs::batch', { bodyLimit: LIMITS.batchBodyBytes }, async (request) => {
    const namespace = namespaceFor(request, 'write');
    const results = await commands.createMany(namespace, parseCreateJobs(request.body), (item) => item, traceparentOf(request.headers));
    return { results: results.map(batchItemJson) };
  });
  app.get<{ Params: { id: string } }>('/jobs/:id', async (request, reply) => {
    const job = await commands.get(namespaceFor(request, 'read'), request.params.id);
    return reply.header('etag', `"${job.version}"`).send(job);
  });
  app.patch<{ Params: { id: string } }>('/jobs/:id', async (request, reply) => {
    const updated = await commands.update(namespaceFor(request, 'write'), request.params.id, request.body, request.headers['if-match']);
    return reply.header('etag', `"${updated.job.version}"`).send(updated);
  });
  app.get<{ Querystring: Record<string, unknown> }>('/jobs', async (request) =>
    commands.list(namespaceFor(request, 'read'), request.query),
  );
  app.delete<{ Params: { id: string } }>('/jobs/:id', async (request, reply) => {
    await commands.cancel(namespaceFor(request, 'write'), request.params.id);
    return reply.code(204).send();
  });
  app.get<{ Params: { id: string }; Querystring: Record<string, unknown> }>('/jobs/:id/runs', async (request) =>
    commands.runs(namespaceFor(request, 'read'), request.params.id, request.query),
  );
  app.post<{ Params: { id: string }; Querystring: { stopSchedule?: string } }>('/jobs/:id/abort', async (request, reply) => {
    const caller = callerWith(request, 'write');
    const stopSchedule = parseBooleanQuery(request.query.stopSchedule, 'stopSchedule');
    const aborted = await commands.abort(caller.namespace, request.params.id, { by: caller.actor, stopSchedule });
    return reply.code(202).send(aborted);
  });
  app.post<{ Params: { id: string } }>('/jobs/:id/backfill', async (request, reply) => {
    const started = await commands.startBackfill(namespaceFor(request, 'write'), request.params.id, request.body);
    return reply.code(202).send(started);
  });
  app.delete<{ Params: { id: string } }>('/jobs/:id/backfill', async (request) =>
    commands.cancelBackfill(namespaceFor(request, 'write'), request.params.id),
  );
  app.get<{ Params: { id: string }; Querystring: Record<string, unknown> }>('/jobs/:id/upcoming', async (request) =>
    commands.upcoming(namespaceFor(request, 'read'), request.params.id, queryValue(request.query, 'count')),
  );
  app.post('/schedules/preview', async (request) => {
    namespaceFor(request, 'read');
    return commands.preview(request.body);
  });
  for (const verb of ['pause', 'resume', 'trigger'] as const) {
    app.post<{ Params: { id: string } }>(`/jobs/:id/${verb}`, async (request) =>
      commands[verb](namespaceFor(request, 'write'), request.params.id),
    );
  }
  app.get('/agents', async (request) => deps.agents(namespaceFor(request, 'read')));
  registerWhoami(app, (request) => {
    if (request.principal === null) throw new ApiError('unauthenticated', 'a bearer token is required');
    return request.principal;
  });
  registerConsole(app, deps.consoleDir);
  app.post('/tokens', async (request, reply) => {
    const created = await deps.tokens.create(namespaceFor(request, 'admin'), request.body);
    return reply.code(201).send({ id: created.token.id, secret: created.secret, token: created.token });
  });
  app.get('/tokens', async (request) => ({ tokens: await deps.tokens.list(namespaceFor(request, 'admin')) }));
  app.delete<{ Params: { id: string } }>('/tokens/:id', async (request, reply) => {
    await deps.tokens.revoke(namespaceFor(request, 'admin'), request.params.id);
    return reply.code(204).send();
  });
  app.post('/webhooks', async (request, reply) => reply.code(201).send(await deps.webhooks.create(namespaceFor(request, 'admin'), request.body)));
  app.get('/webhooks', async (request) => ({ webhooks: await deps.webhooks.list(namespaceFor(request, 'admin')) }));
  app.delete<{ Params: { id: string } }>('/webhooks/:id', async (request, reply) => {
    await deps.webhooks.remove(namespaceFor(request, 'admin'), request.params.id);
    return reply.code(204).send();
  });
  app.get<{ Params: { id: string }; Querystring: Record<string, unknown> }>('/webhooks/:id/deliveries', async (request) =>
    deps.webhooks.deliveries(namespaceFor(request, 'admin'), request.params.id, request.query),
  );
  const openapi = JSON.stringify(openApiDocument());
  app.get('/openapi.json', async (_request, reply) => reply.type('application/json').send(openapi));
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const ok = await deps.ready();
    return reply.code(ok ? 200 : 503).send({ status: ok ? 'ready' : 'database unreachable' });
  });
  app.get('/metrics', async (_request, reply) => {
    const text = await deps.metrics.registry.metrics();
    return reply.type(deps.metrics.registry.contentType).send(text);
  });
  return app;
}

/** One answer of POST /jobs:batch: the status POST /jobs would have given the item, with its job or its error. */
function batchItemJson(result: BatchItemResult, index: number) {
  if (result.kind === 'refused') {
    return { index, status: ERROR_TABLE[result.error.kind].http, jobId: null, created: false, error: errorBody(result.error).error };
  }
  return { index, status: result.kind === 'created' ? 201 : 200, jobId: result.jobId, created: result.kind === 'created', error: null };
}

/** A `true`/`false` query parameter (absent: false). */
function parseBooleanQuery(value: unknown, field: string): boolean {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw new ApiError('invalid_argument', `${field} must be true or false`, field);
}

/** Fastify's own refusals (body parsing, limits), in the project's error shape, keeping their 4xx status. */
function frameworkError(error: unknown, bodyLimit: number): { error: ApiError; status: number } | undefined {
  if (error instanceof ApiError || !(error instanceof Error)) return undefined;
  const { statusCode, code } = error as { statusCode?: number; code?: string };
  if (typeof statusCode !== 'number' || statusCode < 400 || statusCode >= 500) return undefined;
  switch (code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { status: 413, error: new ApiError('payload_too_large', `request body exceeds ${bodyLimit} bytes`, 'body') };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, error: new ApiError('invalid_argument', 'content-type must be application/json', 'content-type') };
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { status: 400, error: new ApiError('invalid_argument', `request body is not valid JSON: ${error.message}`, 'body') };
    default:
      return { status: statusCode, error: new ApiError('invalid_argument', error.message) };
  }
}

function send(reply: FastifyReply, error: ApiError, status = ERROR_TABLE[error.kind].http) {
  return reply.code(status).send(errorBody(error));
}

/** The caller's W3C trace context, when it sent exactly one `traceparent` header (checked where it is used). */
function traceparentOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const value = headers['traceparent'];
  return typeof value === 'string' ? value : undefined;
}
