/**
 * The one shape of every unary gRPC handler (JobService, TokenService): read
 * the `authorization` metadata, authenticate (auth.ts), check the permission
 * the call needs, refuse a request the server could not decode, run the work
 * in the caller's namespace, and map any failure through errors.ts's table.
 *
 * A failure carries the gRPC rich error model: a google.rpc.Status in the
 * `grpc-status-details-bin` trailer with an ErrorInfo (the stable reason, domain
 * "kairos.dev", the error's details as strings), a BadRequest naming the field
 * by its proto path (`retry.max_interval_ms`) for invalid input, and a
 * kairos.v1.ClaimedJob when the job is claimed. The offending field also
 * travels, as before, in the `kairos-field` trailer (the JSON name).
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { anyPack, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { Metadata, type ServerErrorResponse, type sendUnaryData } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import {
  BadRequestSchema,
  ClaimedJobSchema,
  ERROR_DOMAIN,
  ErrorInfoSchema,
  RpcStatusSchema,
  STATUS_DETAILS_KEY,
  undecodableReason,
} from '@kairos/proto';
import { authorize, type Authenticator, type Permission, type Principal } from './auth';
import { ERROR_TABLE, toApiError, type ApiError } from './errors';
import { ValidationError } from './validation';

export type UnaryHandler<Req, Res> = (call: { request: Req; metadata: Metadata }, callback: sendUnaryData<Res>) => void;

export function unaryHandlers(auth: Authenticator, logger: Logger) {
  /** A unary handler that runs `work` in the caller's namespace once the caller holds `permission` ('any': any valid token). */
  return function unary<Req, Res>(
    permission: Permission | 'any',
    work: (request: Req, namespace: string, principal: Principal, metadata: Metadata) => Promise<Res>,
  ): UnaryHandler<Req, Res> {
    return (call, callback) => {
      const authorization = call.metadata.get('authorization')[0];
      auth
        .authenticate(typeof authorization === 'string' ? authorization : undefined)
        .then((principal) => {
          if (permission !== 'any') authorize(principal, permission);
          const undecodable = undecodableReason(call.request);
          if (undecodable !== undefined) throw new ValidationError('body', `the request could not be decoded: ${undecodable}`);
          return work(call.request, principal.namespace, principal, call.metadata);
        })
        .then(
          (response) => callback(null, response),
          (error: unknown) => callback(grpcError(error, logger), null),
        );
    };
  };
}

function grpcError(error: unknown, logger: Logger): ServerErrorResponse {
  const apiError = toApiError(error, (cause) => logger.error({ err: cause }, 'gRPC request failed'));
  const metadata = new Metadata();
  // The field path can come from a payload key, which may hold any character; metadata
  // values must be printable ASCII, and grpc-js throws (outside this promise) otherwise.
  if (apiError.field) metadata.set('kairos-field', printableAscii(apiError.field));
  const code = ERROR_TABLE[apiError.kind].grpc;
  metadata.set(STATUS_DETAILS_KEY, Buffer.from(toBinary(RpcStatusSchema, richStatus(apiError))));
  return Object.assign(new Error(apiError.message), { code, details: apiError.message, metadata });
}

/**
 * The google.rpc.Status of a failure: ErrorInfo always, BadRequest for a named
 * field, ClaimedJob for a claimed job. Also the per-item error of CreateJobs.
 */
export function richStatus(error: ApiError) {
  const code = ERROR_TABLE[error.kind].grpc;
  const metadata: Record<string, string> = {};
  for (const [key, value] of Object.entries(error.details ?? {})) {
    if (value !== null && value !== undefined && typeof value !== 'object') metadata[key] = String(value);
  }
  const details = [anyPack(ErrorInfoSchema, create(ErrorInfoSchema, { reason: error.reason, domain: ERROR_DOMAIN, metadata }))];
  if (error.field !== undefined) {
    const violation = { field: protoFieldPath(error.field), description: error.message };
    details.push(anyPack(BadRequestSchema, create(BadRequestSchema, { fieldViolations: [violation] })));
  }
  if (error.reason === 'JOB_CLAIMED' && error.details) {
    const { runId, leaseOwner, leaseGeneration, leaseUntil } = error.details;
    const claimed = create(ClaimedJobSchema, {
      runId: typeof runId === 'string' ? runId : '',
      agentId: typeof leaseOwner === 'string' ? leaseOwner : '',
      leaseGeneration: BigInt(typeof leaseGeneration === 'number' ? leaseGeneration : 0),
      ...(typeof leaseUntil === 'string' ? { leaseUntil: timestampFromDate(new Date(leaseUntil)) } : {}),
    });
    details.push(anyPack(ClaimedJobSchema, claimed));
  }
  return create(RpcStatusSchema, { code, message: error.message, details });
}

/**
 * A field as the request message names it: `retry.maxIntervalMs` -> `retry.max_interval_ms`;
 * the whole request -> ''. Inside `payload` (a google.protobuf.Struct) the keys are the
 * caller's JSON keys and stay as they are: `payload.timeoutMs`.
 */
export function protoFieldPath(field: string): string {
  if (field === 'body') return '';
  if (field === 'If-Match') return 'expected_version';
  const [first, ...rest] = field.split('.');
  const snake = (part: string) => part.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
  if (first === 'payload') return ['payload', ...rest].join('.');
  return [first ?? '', ...rest].map(snake).join('.');
}

/** `text` with every character outside printable ASCII written as a \\uXXXX escape. */
export function printableAscii(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The caller's W3C trace context, from a `traceparent` metadata entry (checked where it is used). */
export function traceparentOf(metadata: Metadata): string | undefined {
  const value = metadata.get('traceparent')[0];
  return typeof value === 'string' ? value : undefined;
}
