/**
 * The OpenAPI 3.1 document of the REST API, built from the zod schemas that
 * validate requests (validation.ts, token-commands.ts) and describe responses
 * (views.ts): nothing here restates a field. Served at GET /openapi.json and
 * committed as docs/openapi.json (tools/scripts/openapi.mjs keeps it fresh).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { createTokenSchema } from './token-commands';
import { createWebhookSchema } from './webhook-commands';
import {
  backfillSchema,
  createJobSchema,
  createJobsSchema,
  editJobSchema,
  LIMITS,
  listDeliveriesQuerySchema,
  listJobsQuerySchema,
  listRunsQuerySchema,
  previewSchema,
} from './validation';
import { RESPONSE_SCHEMAS } from './views';

type JsonSchema = Record<string, unknown>;
type ResponseName = keyof typeof RESPONSE_SCHEMAS;

const REQUEST_SCHEMAS = {
  CreateJobRequest: createJobSchema,
  CreateJobsRequest: createJobsSchema,
  EditJobRequest: editJobSchema,
  PreviewRequest: previewSchema,
  BackfillRequest: backfillSchema,
  CreateTokenRequest: createTokenSchema,
  CreateWebhookRequest: createWebhookSchema,
} as const;
type RequestName = keyof typeof REQUEST_SCHEMAS;

/** Each named schema as a JSON Schema (2020-12, OpenAPI 3.1's dialect); shared parts become $refs. */
function components(schemas: Record<string, z.ZodType>, io: 'input' | 'output'): Record<string, JsonSchema> {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(schemas)) registry.add(schema, { id });
  const { schemas: out } = z.toJSONSchema(registry, {
    target: 'draft-2020-12',
    io,
    uri: (id) => `#/components/schemas/${id}`,
    unrepresentable: 'any',
  });
  return Object.fromEntries(
    Object.entries(out).map(([id, schema]) => {
      const { $schema: _dialect, $id: _id, ...rest } = schema as JsonSchema;
      return [id, rest];
    }),
  );
}

const ref = (name: RequestName | ResponseName) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: ResponseName, description: string, headers?: JsonSchema) => ({
  description,
  ...(headers ? { headers } : {}),
  content: { 'application/json': { schema: ref(name) } },
});
const failure = (description: string) => json('Error', description);

/** The refusals every authenticated call can meet. */
const COMMON_ERRORS = {
  '400': failure('Invalid input: `error.field` names the field at fault; nothing was changed'),
  '401': failure('No bearer token, or one that is unknown, expired or revoked'),
  '403': failure("The token's role may not do this"),
  '503': failure('The schedule store is unavailable; nothing was changed, retry later'),
};
const BODY_ERRORS = {
  '413': failure(`The request body is larger than ${LIMITS.bodyBytes} bytes`),
  '415': failure('The body is not application/json'),
};
const JOB_ERRORS = {
  '404': failure('No such job in the caller\'s namespace'),
  '414': failure('The job id in the path is too long'),
};

/** Where a created job's id leads (OpenAPI links: clients and fuzzers follow them). */
const JOB_LINKS = Object.fromEntries(
  ['getJob', 'updateJob', 'cancelJob', 'listRuns', 'abortRun', 'startBackfill', 'cancelBackfill', 'upcomingOccurrences', 'pauseJob', 'resumeJob', 'triggerJob'].map(
    (operationId) => [operationId, { operationId, parameters: { id: '$response.body#/jobId' } }],
  ),
);

const jobIdParam = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'The job id (a UUID)',
  schema: { type: 'string', format: 'uuid' },
};

/** Query parameters from a zod object of documented fields (validation.ts). */
function queryParams(schema: z.ZodObject): JsonSchema[] {
  const properties = (z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' }) as { properties: Record<string, JsonSchema> }).properties;
  return Object.entries(properties).map(([name, { description, ...rest }]) => ({
    name,
    in: 'query',
    required: false,
    ...(description ? { description } : {}),
    schema: rest,
  }));
}

function body(name: RequestName) {
  return { required: true, content: { 'application/json': { schema: ref(name) } } };
}

function paths(): JsonSchema {
  const jobOp = (summary: string, operationId: string, ok: JsonSchema, extra: JsonSchema = {}) => ({
    summary,
    operationId,
    tags: ['jobs'],
    parameters: [jobIdParam],
    responses: { ...ok, ...COMMON_ERRORS, ...JOB_ERRORS },
    ...extra,
  });
  const controlOp = (verb: 'pause' | 'resume' | 'trigger', summary: string) =>
    jobOp(summary, `${verb}Job`, {
      '200': json('Job', 'The job after the change'),
      '409': failure(`The job cannot be ${verb === 'trigger' ? 'triggered' : `${verb}d`} in its state (error.reason says why)`),
    });
  return {
    '/jobs': {
      post: {
        summary: 'Create a job (one-off with runAt, recurring with schedule)',
        operationId: 'createJob',
        tags: ['jobs'],
        requestBody: body('CreateJobRequest'),
        responses: {
          '201': { ...json('JobCreated', 'Created'), links: JOB_LINKS },
          '200': { ...json('JobCreated', 'The idempotency key was used before with the same request: the first job'), links: JOB_LINKS },
          '409': failure('The idempotency key was used before with a different request (IDEMPOTENCY_KEY_REUSED)'),
          ...COMMON_ERRORS,
          ...BODY_ERRORS,
        },
      },
      get: {
        summary: "List the caller's jobs, newest id last, a page at a time",
        operationId: 'listJobs',
        tags: ['jobs'],
        parameters: queryParams(listJobsQuerySchema),
        responses: { '200': json('JobPage', 'A page of jobs'), ...COMMON_ERRORS },
      },
    },
    '/jobs:batch': {
      post: {
        summary: `Create up to ${LIMITS.batchJobs} jobs in one transaction, each judged on its own`,
        description:
          'Each item is a POST /jobs body and gets its own answer in `results`, in order: one refused item does not stop the others. ' +
          'Idempotency keys work per item, also between items of one batch. The call itself fails (400) only when the envelope is wrong.',
        operationId: 'createJobs',
        tags: ['jobs'],
        requestBody: body('CreateJobsRequest'),
        responses: {
          '200': json('JobsCreated', 'One result per item: status 201, 200 or the refusal POST /jobs would have answered'),
          ...COMMON_ERRORS,
          '413': failure(`The request body is larger than ${LIMITS.batchBodyBytes} bytes: split the batch`),
          '415': BODY_ERRORS['415'],
        },
      },
    },
    '/jobs/{id}': {
      get: jobOp('Read a job', 'getJob', {
        '200': json('Job', 'The job', { ETag: { description: 'The job\'s version, for If-Match', schema: { type: 'string' } } }),
      }),
      patch: jobOp(
        'Edit a job in place (history and id kept)',
        'updateJob',
        {
          '200': json('JobUpdated', 'The job after the edit', { ETag: { description: 'The new version', schema: { type: 'string' } } }),
          '409': failure('The job cannot be edited now (e.g. it finished)'),
          '412': failure('If-Match named a version the job no longer has (VERSION_MISMATCH)'),
          ...BODY_ERRORS,
        },
        {
          requestBody: body('EditJobRequest'),
          parameters: [
            jobIdParam,
            {
              name: 'If-Match',
              in: 'header',
              required: false,
              description: 'Edit only if the job is at this version (its ETag, e.g. "3")',
              schema: { type: 'string', pattern: '^(W/)?"?[0-9]{1,9}"?$' },
            },
          ],
        },
      ),
      delete: jobOp('Cancel a job that has not started (a claimed job is a 409: abort it instead)', 'cancelJob', {
        '204': { description: 'Cancelled: it will not run' },
        '409': failure('Claimed or finished: error.details names the run, agent and fencing token (JOB_CLAIMED)'),
      }),
    },
    '/jobs/{id}/runs': {
      get: jobOp('List a job\'s runs, oldest first, a page at a time', 'listRuns', { '200': json('RunPage', 'A page of runs') }, {
        parameters: [jobIdParam, ...queryParams(listRunsQuerySchema)],
      }),
    },
    '/jobs/{id}/abort': {
      post: jobOp(
        'Stop the running run: the agent is told to stop, the run ends CANCELLED',
        'abortRun',
        {
          '202': json('Abort', 'The stop was sent to the agent holding the run'),
          '409': failure('Nothing is running (NOTHING_RUNNING)'),
        },
        {
          parameters: [
            jobIdParam,
            {
              name: 'stopSchedule',
              in: 'query',
              required: false,
              description: 'A recurring job stops too (CANCELLED) instead of going on to its next occurrence',
              schema: { type: 'string', enum: ['true', 'false'] },
            },
          ],
        },
      ),
    },
    '/jobs/{id}/backfill': {
      post: jobOp(
        "Run a recurring job's occurrences in [from, to), one at a time",
        'startBackfill',
        {
          '202': json('Backfill', 'The backfill is queued'),
          '409': failure('The job cannot be backfilled now (one-off, finished, or a backfill already running)'),
          ...BODY_ERRORS,
        },
        { requestBody: body('BackfillRequest') },
      ),
      delete: jobOp('Stop a backfill', 'cancelBackfill', {
        '200': json('BackfillCancelled', 'Stopped (finishing: a backfill run is still running and ends on its own)'),
        '409': failure('No backfill is in progress'),
      }),
    },
    '/jobs/{id}/upcoming': {
      get: jobOp('The next occurrences of a job, marked where DST moved them', 'upcomingOccurrences', { '200': json('Upcoming', 'The occurrences') }, {
        parameters: [
          jobIdParam,
          { name: 'count', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: LIMITS.previewCount, default: LIMITS.defaultPreviewCount } },
        ],
      }),
    },
    '/jobs/{id}/pause': { post: controlOp('pause', 'Pause a job: it does not start until resumed') },
    '/jobs/{id}/resume': { post: controlOp('resume', 'Resume a paused job') },
    '/jobs/{id}/trigger': { post: controlOp('trigger', 'Make a waiting job due now') },
    '/schedules/preview': {
      post: {
        summary: 'The next fire times of a cron expression in a zone, marked where DST moved them',
        operationId: 'previewSchedule',
        tags: ['schedules'],
        requestBody: body('PreviewRequest'),
        responses: { '200': json('Preview', 'The occurrences'), ...COMMON_ERRORS, ...BODY_ERRORS },
      },
    },
    '/agents': {
      get: {
        summary: "The agents of the caller's namespace connected to any coordinator of the cluster",
        operationId: 'listAgents',
        tags: ['agents'],
        responses: {
          '200': { description: 'The agents', content: { 'application/json': { schema: { type: 'array', items: ref('Agent') } } } },
          ...COMMON_ERRORS,
        },
      },
    },
    '/whoami': {
      get: {
        summary: "The caller's token: its namespace, role and name (any valid token)",
        operationId: 'whoami',
        tags: ['tokens'],
        responses: { '200': json('Whoami', 'The caller'), '401': COMMON_ERRORS['401'], '503': COMMON_ERRORS['503'] },
      },
    },
    '/tokens': {
      post: {
        summary: "Create a token in the caller's namespace (admin); the secret is shown once",
        operationId: 'createToken',
        tags: ['tokens'],
        requestBody: body('CreateTokenRequest'),
        responses: {
          '201': { ...json('TokenCreated', 'Created'), links: { revokeToken: { operationId: 'revokeToken', parameters: { id: '$response.body#/id' } } } },
          ...COMMON_ERRORS,
          ...BODY_ERRORS,
        },
      },
      get: {
        summary: "The tokens of the caller's namespace (admin); never their secrets",
        operationId: 'listTokens',
        tags: ['tokens'],
        responses: { '200': json('TokenList', 'The tokens'), ...COMMON_ERRORS },
      },
    },
    '/tokens/{id}': {
      delete: {
        summary: 'Revoke a token (admin)',
        operationId: 'revokeToken',
        tags: ['tokens'],
        parameters: [{ ...jobIdParam, description: 'The token id (a UUID)' }],
        responses: {
          '204': { description: 'Revoked' },
          '404': failure("No such token in the caller's namespace"),
          '414': failure('The token id in the path is too long'),
          ...COMMON_ERRORS,
        },
      },
    },
    '/webhooks': {
      post: {
        summary: "Create a webhook in the caller's namespace (admin); the signing secret is shown once",
        operationId: 'createWebhook',
        tags: ['webhooks'],
        requestBody: body('CreateWebhookRequest'),
        responses: {
          '201': json('WebhookCreated', 'Created'),
          '404': failure('jobId names no job of the namespace'),
          ...COMMON_ERRORS,
          ...BODY_ERRORS,
        },
      },
      get: {
        summary: "The webhooks of the caller's namespace (admin); never their secrets",
        operationId: 'listWebhooks',
        tags: ['webhooks'],
        responses: { '200': json('WebhookList', 'The webhooks'), ...COMMON_ERRORS },
      },
    },
    '/webhooks/{id}': {
      delete: {
        summary: 'Delete a webhook and its deliveries (admin)',
        operationId: 'deleteWebhook',
        tags: ['webhooks'],
        parameters: [{ ...jobIdParam, description: 'The webhook id (a UUID)' }],
        responses: { '204': { description: 'Deleted' }, '404': failure("No such webhook in the caller's namespace"), '414': failure('The id in the path is too long'), ...COMMON_ERRORS },
      },
    },
    '/webhooks/{id}/deliveries': {
      get: {
        summary: "A webhook's deliveries, newest first, a page at a time (admin)",
        operationId: 'listWebhookDeliveries',
        tags: ['webhooks'],
        parameters: [{ ...jobIdParam, description: 'The webhook id (a UUID)' }, ...queryParams(listDeliveriesQuerySchema)],
        responses: { '200': json('DeliveryList', 'A page of deliveries'), '404': failure("No such webhook in the caller's namespace"), '414': failure('The id in the path is too long'), ...COMMON_ERRORS },
      },
    },
    '/healthz': {
      get: { summary: 'Liveness', operationId: 'healthz', tags: ['probes'], security: [], responses: { '200': json('Health', 'The process serves') } },
    },
    '/readyz': {
      get: {
        summary: 'Readiness: the database answers',
        operationId: 'readyz',
        tags: ['probes'],
        security: [],
        responses: { '200': json('Health', 'Ready'), '503': json('Health', 'The database is unreachable') },
      },
    },
    '/metrics': {
      get: {
        summary: 'Prometheus metrics (counts only, no job data)',
        operationId: 'metrics',
        tags: ['probes'],
        security: [],
        responses: { '200': { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } } },
      },
    },
    '/openapi.json': {
      get: {
        summary: 'This document',
        operationId: 'openapi',
        tags: ['probes'],
        security: [],
        responses: { '200': { description: 'OpenAPI 3.1', content: { 'application/json': { schema: { type: 'object' } } } } },
      },
    },
  };
}

/** The coordinator package's version (src/api and dist/api sit at the same depth). */
export const COORDINATOR_VERSION: string = (
  JSON.parse(readFileSync(path.join(__dirname, '../../package.json'), 'utf8')) as { version: string }
).version;

/** The whole document; the same for every coordinator of a version (no host, no secrets). */
export function openApiDocument(version: string = COORDINATOR_VERSION): JsonSchema {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Kairos REST API',
      version,
      description:
        'Distributed job scheduler. Every call but the probes takes `Authorization: Bearer <token>` and works in the token\'s namespace. ' +
        'Errors are `{error: {code, reason, message, field?, details?}}`; branch on `reason`. The same operations exist over gRPC (package kairos.v1).',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }],
    tags: [
      { name: 'jobs' },
      { name: 'schedules' },
      { name: 'agents' },
      { name: 'tokens' },
      { name: 'webhooks', description: 'Failure notifications: job.dead, occurrence.failed, occurrence.missed' },
      { name: 'probes', description: 'Public: no token needed' },
    ],
    paths: paths(),
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A Kairos token (kairos_…), see `kairos tokens create`' } },
      schemas: { ...components(REQUEST_SCHEMAS, 'input'), ...components(RESPONSE_SCHEMAS, 'output') },
    },
  };
}
