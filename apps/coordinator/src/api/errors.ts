/**
 * The ONE table from outcomes to HTTP status, gRPC status code and error body
 * `{error: {code, message, field?}}`. REST and gRPC both call `toApiError` and
 * read this table; nothing else decides a status.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';
import { StoreUnavailableError } from '@kairos/store';
import { ValidationError } from './validation';

export type ApiErrorKind =
  | 'invalid_argument'
  | 'not_found'
  | 'failed_precondition'
  | 'already_exists'
  | 'version_mismatch'
  | 'unauthenticated'
  | 'permission_denied'
  | 'payload_too_large'
  | 'unavailable'
  | 'internal';

export const ERROR_TABLE: Record<ApiErrorKind, { http: number; grpc: GrpcStatus }> = {
  invalid_argument: { http: 400, grpc: GrpcStatus.INVALID_ARGUMENT },
  not_found: { http: 404, grpc: GrpcStatus.NOT_FOUND },
  // Cancel of a claimed or finished job, pause of a running one: the honest 409.
  failed_precondition: { http: 409, grpc: GrpcStatus.FAILED_PRECONDITION },
  // Idempotency key reused with a different request body.
  already_exists: { http: 409, grpc: GrpcStatus.ALREADY_EXISTS },
  // An edit named a version the job no longer has (If-Match / expected_version): re-read, re-apply.
  version_mismatch: { http: 412, grpc: GrpcStatus.ABORTED },
  unauthenticated: { http: 401, grpc: GrpcStatus.UNAUTHENTICATED },
  permission_denied: { http: 403, grpc: GrpcStatus.PERMISSION_DENIED },
  payload_too_large: { http: 413, grpc: GrpcStatus.RESOURCE_EXHAUSTED },
  // The database is unreachable: nothing was changed; retry later.
  unavailable: { http: 503, grpc: GrpcStatus.UNAVAILABLE },
  internal: { http: 500, grpc: GrpcStatus.INTERNAL },
};

/** An error meant for the caller: its message is shown as is. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    readonly kind: ApiErrorKind,
    message: string,
    readonly field?: string,
    /** Extra machine-readable facts (e.g. the run and lease of a claimed job). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export interface ErrorBody {
  error: { code: ApiErrorKind; message: string; field?: string; details?: Record<string, unknown> };
}

/**
 * Classifies anything thrown while serving a request. Unknown errors become
 * `internal` with the message withheld; `logCause` receives them so the cause
 * is logged, never shown.
 */
export function toApiError(error: unknown, logCause: (error: unknown) => void): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof ValidationError) return new ApiError('invalid_argument', error.message, error.field);
  if (error instanceof StoreUnavailableError) {
    return new ApiError('unavailable', 'the schedule store is unavailable; nothing was changed, retry later');
  }
  logCause(error);
  return new ApiError('internal', 'internal error');
}

export function errorBody(error: ApiError): ErrorBody {
  return {
    error: {
      code: error.kind,
      message: error.message,
      ...(error.field ? { field: error.field } : {}),
      ...(error.details ? { details: error.details } : {}),
    },
  };
}
