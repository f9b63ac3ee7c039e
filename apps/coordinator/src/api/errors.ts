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

/**
 * The stable reason of each kind when nothing more specific applies. Reasons
 * are UPPER_SNAKE_CASE, never change once published, and travel as
 * `error.reason` (REST) and google.rpc.ErrorInfo.reason (gRPC); callers
 * branch on them.
 */
const DEFAULT_REASONS: Record<ApiErrorKind, string> = {
  invalid_argument: 'INVALID_ARGUMENT',
  not_found: 'NOT_FOUND',
  failed_precondition: 'FAILED_PRECONDITION',
  already_exists: 'IDEMPOTENCY_KEY_REUSED',
  version_mismatch: 'VERSION_MISMATCH',
  unauthenticated: 'UNAUTHENTICATED',
  permission_denied: 'PERMISSION_DENIED',
  payload_too_large: 'PAYLOAD_TOO_LARGE',
  unavailable: 'STORE_UNAVAILABLE',
  internal: 'INTERNAL',
};

/** An error meant for the caller: its message is shown as is. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  /** The stable reason callers branch on (DEFAULT_REASONS unless given). */
  readonly reason: string;
  constructor(
    readonly kind: ApiErrorKind,
    message: string,
    readonly field?: string,
    /** Extra machine-readable facts (e.g. the run and lease of a claimed job). */
    readonly details?: Record<string, unknown>,
    reason?: string,
  ) {
    super(message);
    this.reason = reason ?? DEFAULT_REASONS[kind];
  }
}

export interface ErrorBody {
  error: { code: ApiErrorKind; reason: string; message: string; field?: string; details?: Record<string, unknown> };
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
      reason: error.reason,
      message: error.message,
      ...(error.field ? { field: error.field } : {}),
      ...(error.details ? { details: error.details } : {}),
    },
  };
}
