/**
 * The one shape of every unary gRPC handler (JobService, TokenService): read
 * the `authorization` metadata, authenticate (auth.ts), check the permission
 * the call needs, refuse a request the server could not decode, run the work
 * in the caller's namespace, and map any failure through errors.ts's table.
 * The offending field travels in the `kairos-field` trailing metadata entry.
 */
import { Metadata, type ServerErrorResponse, type sendUnaryData } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { undecodableReason } from '@kairos/proto';
import { authorize, type Authenticator, type Permission, type Principal } from './auth';
import { ERROR_TABLE, toApiError } from './errors';
import { ValidationError } from './validation';

export type UnaryHandler<Req, Res> = (call: { request: Req; metadata: Metadata }, callback: sendUnaryData<Res>) => void;

export function unaryHandlers(auth: Authenticator, logger: Logger) {
  /** A unary handler that runs `work` in the caller's namespace once the caller holds `permission`. */
  return function unary<Req, Res>(
    permission: Permission,
    work: (request: Req, namespace: string, principal: Principal) => Promise<Res>,
  ): UnaryHandler<Req, Res> {
    return (call, callback) => {
      const authorization = call.metadata.get('authorization')[0];
      auth
        .authenticate(typeof authorization === 'string' ? authorization : undefined)
        .then((principal) => {
          authorize(principal, permission);
          const undecodable = undecodableReason(call.request);
          if (undecodable !== undefined) throw new ValidationError('body', `the request could not be decoded: ${undecodable}`);
          return work(call.request, principal.namespace, principal);
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
  return Object.assign(new Error(apiError.message), {
    code: ERROR_TABLE[apiError.kind].grpc,
    details: apiError.message,
    metadata,
  });
}

/** `text` with every character outside printable ASCII written as a \\uXXXX escape. */
export function printableAscii(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
