/**
 * @kairos/proto — the Kairos wire contract for TypeScript.
 *
 * - Generated protobuf-es v2 code for proto/kairos/v1 (messages, enums, schemas,
 *   and the `JobService` / `AgentService` descriptors). Never edit ./gen by hand:
 *   run `npx buf generate proto --template proto/buf.gen.yaml` from the repo root.
 * - The grpc-js adapter (./grpc) and the descriptors for server reflection (./files).
 *
 * Only transports (apps' gRPC layers, libs/client) import this package.
 */
export * from './gen/kairos/v1/jobs_pb';
export * from './gen/kairos/v1/agent_pb';
export * from './gen/kairos/v1/tokens_pb';
export * from './gen/kairos/v1/webhooks_pb';
export * from './gen/kairos/v1/errors_pb';
// The standard rich-error messages, under names that do not collide with ours.
export { StatusSchema as RpcStatusSchema, type Status as RpcStatus } from './gen/google/rpc/status_pb';
export { BadRequestSchema, BadRequest_FieldViolationSchema, ErrorInfoSchema, type BadRequest, type ErrorInfo } from './gen/google/rpc/error_details_pb';
/** Trailer carrying the serialized google.rpc.Status of a failed call (the gRPC rich error model). */
export const STATUS_DETAILS_KEY = 'grpc-status-details-bin';
/** ErrorInfo.domain of every Kairos error. */
export const ERROR_DOMAIN = 'kairos.dev';
export * from './grpc';
export * from './complete';
export * from './files';
