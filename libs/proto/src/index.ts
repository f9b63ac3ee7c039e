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
export * from './grpc';
export * from './files';
