/**
 * KairosError: the only error type libs/client throws.
 *
 * Every failure a caller can see — a status from the coordinator, a transport
 * failure, a request the client refused to send — arrives as a KairosError with
 * one of the closed codes below. Callers switch on `code`; `field` names the
 * offending input when the server (or the client's own checks) pointed at one;
 * `cause` keeps the original error (usually a grpc-js ServiceError) for logs.
 */
import { fromBinary } from '@bufbuild/protobuf';
import { anyUnpack, timestampDate } from '@bufbuild/protobuf/wkt';
import { status as GrpcStatus, type Metadata, type ServiceError } from '@grpc/grpc-js';
import { BadRequestSchema, ClaimedJobSchema, ErrorInfoSchema, RpcStatusSchema, STATUS_DETAILS_KEY, type RpcStatus } from '@kairos/proto';

/**
 * The closed set of error codes. Values are stable strings, safe to log,
 * compare and put in JSON.
 */
export const KairosErrorCode = {
  /** The request is malformed or fails validation; `field` names the input when known. */
  InvalidArgument: 'invalid-argument',
  /** No such job in the caller's namespace (other namespaces look the same as missing). */
  NotFound: 'not-found',
  /** The job's state forbids the call, e.g. cancelling a CLAIMED job (REST 409). */
  FailedPrecondition: 'failed-precondition',
  /** An idempotency key was reused with a different request (REST 409). */
  AlreadyExists: 'already-exists',
  /** An edit named a version the job no longer has (REST 412): read the job again and re-apply the change. */
  Aborted: 'aborted',
  /** No bearer token, or one the coordinator does not accept. */
  Unauthenticated: 'unauthenticated',
  /** The token is valid but its role may not make this call. */
  PermissionDenied: 'permission-denied',
  /** The coordinator could not be reached, or is shutting down; safe to retry. */
  Unavailable: 'unavailable',
  /** The call did not finish within its deadline; it may or may not have taken effect. */
  DeadlineExceeded: 'deadline-exceeded',
  /** The coordinator (or this client) hit a bug or sent something unreadable. */
  Internal: 'internal',
  /** Anything else: an unexpected status or a non-gRPC failure. */
  Unknown: 'unknown',
} as const;

export type KairosErrorCode = (typeof KairosErrorCode)[keyof typeof KairosErrorCode];

/** Trailing-metadata key in which the coordinator names the offending request field. */
export const FIELD_METADATA_KEY = 'kairos-field';

/** The run that holds a claimed job (reason `JOB_CLAIMED`): stop it with abortRun. */
export interface ClaimedJobInfo {
  runId: string;
  agentId: string;
  /** The run's fencing token. */
  leaseGeneration: number;
  leaseUntil: Date | null;
}

export interface KairosErrorOptions {
  /** The request field the error is about (e.g. `runAt`, `payload`). */
  field?: string | undefined;
  /** The underlying error, kept for diagnostics. */
  cause?: unknown;
  reason?: string | null;
  details?: Readonly<Record<string, string>>;
  claimed?: ClaimedJobInfo | null;
}

export class KairosError extends Error {
  override readonly name = 'KairosError';
  readonly code: KairosErrorCode;
  readonly field: string | undefined;
  /**
   * The coordinator's stable reason (google.rpc.ErrorInfo), e.g. `JOB_CLAIMED`,
   * `NOTHING_RUNNING`, `JOB_NOT_FOUND`, `INVALID_ARGUMENT`; null for failures
   * that never reached it (deadline, connection, the client's own checks).
   */
  readonly reason: string | null;
  /** The facts the coordinator attached (ErrorInfo metadata), as strings. */
  readonly details: Readonly<Record<string, string>>;
  /** For `JOB_CLAIMED`: the run, agent and fencing token holding the job. */
  readonly claimed: ClaimedJobInfo | null;

  constructor(code: KairosErrorCode, message: string, options: KairosErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.field = options.field;
    this.reason = options.reason ?? null;
    this.details = options.details ?? {};
    this.claimed = options.claimed ?? null;
  }

  /**
   * Turns anything thrown into a KairosError: a KairosError is returned as is;
   * a grpc-js ServiceError is mapped by status code, with its details as the
   * message and `kairos-field` trailing metadata as the field; any other Error
   * or value becomes `unknown`.
   */
  static from(reason: unknown): KairosError {
    if (reason instanceof KairosError) return reason;
    if (isServiceError(reason)) {
      const code = codeForStatus(reason.code);
      const message = reason.details || GrpcStatus[reason.code] || reason.message;
      return new KairosError(code, message, { field: fieldFromMetadata(reason.metadata), cause: reason, ...richDetails(reason.metadata) });
    }
    if (reason instanceof Error) return new KairosError(KairosErrorCode.Unknown, reason.message, { cause: reason });
    return new KairosError(KairosErrorCode.Unknown, String(reason), { cause: reason });
  }
}

/**
 * gRPC status → KairosError code. The six statuses the JobService contract
 * names map one to one; the rest are folded into the nearest meaning.
 */
function codeForStatus(code: GrpcStatus): KairosErrorCode {
  switch (code) {
    case GrpcStatus.INVALID_ARGUMENT:
    case GrpcStatus.OUT_OF_RANGE:
      return KairosErrorCode.InvalidArgument;
    case GrpcStatus.NOT_FOUND:
      return KairosErrorCode.NotFound;
    case GrpcStatus.FAILED_PRECONDITION:
      return KairosErrorCode.FailedPrecondition;
    case GrpcStatus.ABORTED:
      return KairosErrorCode.Aborted;
    case GrpcStatus.ALREADY_EXISTS:
      return KairosErrorCode.AlreadyExists;
    case GrpcStatus.UNAUTHENTICATED:
      return KairosErrorCode.Unauthenticated;
    case GrpcStatus.PERMISSION_DENIED:
      return KairosErrorCode.PermissionDenied;
    case GrpcStatus.UNAVAILABLE:
      return KairosErrorCode.Unavailable;
    case GrpcStatus.DEADLINE_EXCEEDED:
      return KairosErrorCode.DeadlineExceeded;
    case GrpcStatus.INTERNAL:
    case GrpcStatus.DATA_LOSS:
    case GrpcStatus.UNIMPLEMENTED:
      return KairosErrorCode.Internal;
    default:
      // OK (never an error), CANCELLED, UNKNOWN, RESOURCE_EXHAUSTED.
      return KairosErrorCode.Unknown;
  }
}

/** Structural check: grpc-js errors are plain Errors with `code`, `details` and `metadata`. */
function isServiceError(reason: unknown): reason is ServiceError {
  if (!(reason instanceof Error)) return false;
  const candidate = reason as Partial<ServiceError>;
  return typeof candidate.code === 'number' && typeof candidate.details === 'string';
}

function fieldFromMetadata(metadata: unknown): string | undefined {
  // Structural, so a Metadata from another copy of grpc-js is read as well.
  if (typeof (metadata as Partial<Metadata> | undefined)?.get !== 'function') return undefined;
  const [value] = (metadata as Metadata).get(FIELD_METADATA_KEY);
  if (value === undefined) return undefined;
  const text = typeof value === 'string' ? value : value.toString('utf8');
  return text === '' ? undefined : text;
}

/** Reads the google.rpc.Status a Kairos coordinator attaches; nothing when absent or unreadable. */
function richDetails(metadata: Metadata | undefined): Pick<KairosErrorOptions, 'reason' | 'details' | 'claimed'> {
  const raw = metadata?.get(STATUS_DETAILS_KEY)[0];
  if (!(raw instanceof Uint8Array)) return {};
  try {
    const { field: _field, ...details } = statusDetails(fromBinary(RpcStatusSchema, raw));
    return details;
  } catch {
    return {};
  }
}

/** The reason, facts, claim and field (BadRequest's first violation, as a proto path) of a google.rpc.Status. */
function statusDetails(status: RpcStatus): Pick<KairosErrorOptions, 'reason' | 'details' | 'claimed' | 'field'> {
  const out: Pick<KairosErrorOptions, 'reason' | 'details' | 'claimed' | 'field'> = {};
  for (const detail of status.details) {
    const info = anyUnpack(detail, ErrorInfoSchema);
    if (info !== undefined) {
      out.reason = info.reason;
      out.details = { ...info.metadata };
    }
    const badRequest = anyUnpack(detail, BadRequestSchema);
    const violation = badRequest?.fieldViolations[0];
    if (violation !== undefined && violation.field !== '') out.field = jsonFieldPath(violation.field);
    const claimed = anyUnpack(detail, ClaimedJobSchema);
    if (claimed !== undefined) {
      out.claimed = {
        runId: claimed.runId,
        agentId: claimed.agentId,
        leaseGeneration: Number(claimed.leaseGeneration),
        leaseUntil: claimed.leaseUntil === undefined ? null : timestampDate(claimed.leaseUntil),
      };
    }
  }
  return out;
}

/**
 * A proto field path as the JSON name this client's `field` uses:
 * `retry.max_interval_ms` -> `retry.maxIntervalMs`; keys inside `payload` are
 * the caller's own and stay as they are.
 */
function jsonFieldPath(path: string): string {
  const [first, ...rest] = path.split('.');
  const camel = (part: string) => part.replace(/_([a-z0-9])/g, (_match, letter: string) => letter.toUpperCase());
  if (first === 'payload') return path;
  return [first ?? '', ...rest].map(camel).join('.');
}

/** The KairosError of a google.rpc.Status carried in a response (a CreateJobs item's refusal). */
export function errorFromStatus(status: RpcStatus): KairosError {
  return new KairosError(codeForStatus(status.code), status.message || GrpcStatus[status.code] || 'refused', statusDetails(status));
}
