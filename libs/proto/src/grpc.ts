/**
 * The one bridge between protobuf-es v2 service descriptors and grpc-js.
 *
 * protoc-gen-es emits a `GenService` per service (e.g. `JobService`): a
 * descriptor whose `method` record is keyed by the ECMAScript method name
 * (`createJob`) and carries `methodKind`, `input` and `output` schemas. grpc-js
 * wants a `ServiceDefinition`: per method, the HTTP/2 path, whether each side
 * streams, and functions that turn messages into bytes and back. Everything
 * here derives the latter from the former, so no method is ever listed by hand:
 *
 * - path: `/<package>.<Service>/<Method>`, e.g. `/kairos.v1.JobService/CreateJob`;
 * - requestStream / responseStream: from `methodKind`;
 * - serialize: `toBinary` (after `create`, so plain init objects are accepted);
 * - deserialize: `fromBinary` (always yields a complete message). A request
 *   the server cannot decode (nested past protobuf-es's recursion limit,
 *   malformed bytes) becomes an empty message marked `undecodable`, so the
 *   handler can refuse it with INVALID_ARGUMENT: grpc-js itself would answer
 *   INTERNAL, as if the server were broken.
 *
 * Servers register with `addGrpcService(server, JobService, impl)`, clients come
 * from `createGrpcClient(JobService, address, credentials)`; both are typed from
 * the descriptor. Handlers receive full messages and may answer with either full
 * messages or init objects (`{ jobId, created: true }`).
 */
import { create, fromBinary, toBinary, type DescMessage, type DescService } from '@bufbuild/protobuf';
import type { MessageInitShape, MessageShape } from '@bufbuild/protobuf';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import * as grpc from '@grpc/grpc-js';
import { hotCodecFor, type HotCodec } from './hot-codec';

/**
 * Channel options every Kairos gRPC client should use (agents, CLI, libs/client).
 *
 * - `grpc.per_rpc_retry_buffer_size: 0`: grpc-js keeps a copy of every message a
 *   call sends so it can replay them on a retry, and copying that buffer per
 *   message makes a long-lived client stream (the agent's Connect stream) slow to
 *   a crawl under bursts. With a zero-size buffer the call is committed at once
 *   and nothing is copied. Kairos never relies on transparent retries: the agent
 *   protocol recovers by reconnecting and re-announcing its leases, and unary
 *   retries are the caller's decision (CreateJob via its idempotency key).
 * - keepalive pings every 15 s, dropping the connection when one is not answered
 *   within 5 s: a coordinator that vanished without closing TCP (node lost,
 *   network partition) is noticed in seconds, so the agent reconnects to another
 *   coordinator well within a lease. The grpc-js server accepts pings at this
 *   rate; a proxy in between must allow it too.
 */
export const KAIROS_CHANNEL_OPTIONS = {
  'grpc.per_rpc_retry_buffer_size': 0,
  'grpc.keepalive_time_ms': 15_000,
  'grpc.keepalive_timeout_ms': 5_000,
} as const satisfies grpc.ChannelOptions;

/**
 * Server options for Kairos coordinators: ping each connected client every 15 s
 * and drop it after 5 s without an answer, so a vanished agent's stream is
 * closed (and its session state freed) promptly. Its leases expire on their
 * own regardless; this is resource hygiene, not correctness.
 */
export const KAIROS_SERVER_OPTIONS = {
  'grpc.keepalive_time_ms': 15_000,
  'grpc.keepalive_timeout_ms': 5_000,
} as const satisfies grpc.ServerOptions;

/** One method entry of a generated service (`typeof JobService.method.createJob`). */
type GenMethod = GenServiceMethods[string];

/** The method record of a generated service, e.g. `{ createJob: …, getJob: … }`. */
export type ServiceMethods<S> = S extends GenService<infer M> ? M : never;

/** Message type a method receives (always a complete message). */
export type RequestOf<M extends GenMethod> = MessageShape<M['input']>;
/** Message type a method returns (always a complete message). */
export type ResponseOf<M extends GenMethod> = MessageShape<M['output']>;
/** What a sender may pass for a message: the message itself or an init object. */
type Init<D extends DescMessage> = MessageInitShape<D>;

/** grpc-js `ServiceDefinition` for a generated service, keyed by method local name. */
export type GrpcServiceDefinition<M extends GenServiceMethods> = {
  readonly [K in keyof M]: grpc.MethodDefinition<Init<M[K]['input']>, ResponseOf<M[K]>> &
    grpc.ServerMethodDefinition<RequestOf<M[K]>, Init<M[K]['output']>>;
};

/** Server handler for one method, chosen by its kind. */
export type GrpcHandler<M extends GenMethod> = M['methodKind'] extends 'unary'
  ? grpc.handleUnaryCall<RequestOf<M>, Init<M['output']>>
  : M['methodKind'] extends 'server_streaming'
    ? grpc.handleServerStreamingCall<RequestOf<M>, Init<M['output']>>
    : M['methodKind'] extends 'client_streaming'
      ? grpc.handleClientStreamingCall<RequestOf<M>, Init<M['output']>>
      : grpc.handleBidiStreamingCall<RequestOf<M>, Init<M['output']>>;

/** Server implementation of a whole generated service: one handler per method. */
export type GrpcServiceImplementation<M extends GenServiceMethods> = {
  [K in keyof M]: GrpcHandler<M[K]>;
};

type CallOptions = Partial<grpc.CallOptions>;

/**
 * Client-side unary method, with grpc-js's usual optional metadata/options.
 * The shortest overload is last because TypeScript infers from the last one:
 * `Parameters<…>`, `util.promisify` and similar helpers then see `(request, callback)`.
 */
export interface UnaryClientMethod<I, O> {
  (request: I, metadata: grpc.Metadata, options: CallOptions, callback: grpc.requestCallback<O>): grpc.ClientUnaryCall;
  (request: I, options: CallOptions, callback: grpc.requestCallback<O>): grpc.ClientUnaryCall;
  (request: I, metadata: grpc.Metadata, callback: grpc.requestCallback<O>): grpc.ClientUnaryCall;
  (request: I, callback: grpc.requestCallback<O>): grpc.ClientUnaryCall;
}

/** Client-side server-streaming method. */
export interface ServerStreamingClientMethod<I, O> {
  (request: I, metadata?: grpc.Metadata, options?: CallOptions): grpc.ClientReadableStream<O>;
  (request: I, options?: CallOptions): grpc.ClientReadableStream<O>;
}

/** Client-side client-streaming method. */
export interface ClientStreamingClientMethod<I, O> {
  (metadata: grpc.Metadata, options: CallOptions, callback: grpc.requestCallback<O>): grpc.ClientWritableStream<I>;
  (options: CallOptions, callback: grpc.requestCallback<O>): grpc.ClientWritableStream<I>;
  (metadata: grpc.Metadata, callback: grpc.requestCallback<O>): grpc.ClientWritableStream<I>;
  (callback: grpc.requestCallback<O>): grpc.ClientWritableStream<I>;
}

/** Client-side bidirectional-streaming method. */
export interface BidiStreamingClientMethod<I, O> {
  (metadata?: grpc.Metadata, options?: CallOptions): grpc.ClientDuplexStream<I, O>;
  (options?: CallOptions): grpc.ClientDuplexStream<I, O>;
}

/** Client-side signature of one method, chosen by its kind. */
export type GrpcClientMethod<M extends GenMethod> = M['methodKind'] extends 'unary'
  ? UnaryClientMethod<Init<M['input']>, ResponseOf<M>>
  : M['methodKind'] extends 'server_streaming'
    ? ServerStreamingClientMethod<Init<M['input']>, ResponseOf<M>>
    : M['methodKind'] extends 'client_streaming'
      ? ClientStreamingClientMethod<Init<M['input']>, ResponseOf<M>>
      : BidiStreamingClientMethod<Init<M['input']>, ResponseOf<M>>;

/** A grpc-js client for a generated service: `grpc.Client` plus one method per RPC. */
export type GrpcClient<M extends GenServiceMethods> = grpc.Client & {
  readonly [K in keyof M]: GrpcClientMethod<M[K]>;
};

/** Typed form of what `grpc.makeGenericClientConstructor` returns. */
export interface GrpcClientConstructor<M extends GenServiceMethods> {
  new (address: string, credentials: grpc.ChannelCredentials, options?: grpc.ClientOptions): GrpcClient<M>;
  readonly service: GrpcServiceDefinition<M>;
  readonly serviceName: string;
}

/** `Buffer` view of protobuf-es output, sharing its memory (grpc-js wants a Buffer). */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * Encoder accepting a complete message or an init object of the schema. The
 * agent stream's per-job messages have hand-written codecs (hot-codec.ts);
 * whatever those decline goes through protobuf-es.
 */
function serializer<D extends DescMessage>(schema: D): grpc.serialize<Init<D>> {
  const hot = hotCodecFor(schema);
  if (hot === undefined) return (value) => asBuffer(toBinary(schema, create(schema, value)));
  return (value) => {
    const message = create(schema, value);
    return asBuffer(hot.encode(message) ?? toBinary(schema, message));
  };
}

function decode<D extends DescMessage>(schema: D, hot: HotCodec | undefined, bytes: Uint8Array): MessageShape<D> {
  return (hot?.decode(bytes) as MessageShape<D> | undefined) ?? fromBinary(schema, bytes);
}

/** Decoder producing a complete message of the schema. */
function deserializer<D extends DescMessage>(schema: D): grpc.deserialize<MessageShape<D>> {
  const hot = hotCodecFor(schema);
  return (bytes) => decode(schema, hot, bytes);
}

const UNDECODABLE = Symbol('kairos.undecodable');

/** Server-side request decoder: never throws; what cannot be decoded is an empty message marked with why. */
function lenientDeserializer<D extends DescMessage>(schema: D): grpc.deserialize<MessageShape<D>> {
  const hot = hotCodecFor(schema);
  return (bytes) => {
    try {
      return decode(schema, hot, bytes);
    } catch (error: unknown) {
      const reason = error instanceof Error ? error.message : String(error);
      return Object.assign(create(schema), { [UNDECODABLE]: reason }) as MessageShape<D>;
    }
  };
}

/** Why a request received by a server could not be decoded; undefined for every decoded message. */
export function undecodableReason(message: unknown): string | undefined {
  if (message === null || typeof message !== 'object') return undefined;
  return (message as { [UNDECODABLE]?: string })[UNDECODABLE];
}

// Definitions are pure functions of the descriptor: build each one once, so every
// client constructor and server registration of a service shares the same object.
const definitions = new WeakMap<DescService, Record<string, grpc.MethodDefinition<unknown, unknown>>>();

/**
 * grpc-js `ServiceDefinition` for a protobuf-es v2 service descriptor, keyed by
 * the methods' local names (`createJob`). Usable with `server.addService` and
 * `grpc.makeGenericClientConstructor`.
 */
export function grpcServiceDefinition<M extends GenServiceMethods>(service: GenService<M>): GrpcServiceDefinition<M> {
  // GenService is DescService with a narrower `method` record; the generic part
  // only adds types, so the untyped descriptor is what we read at run time.
  const desc = service as unknown as DescService;
  let definition = definitions.get(desc);
  if (definition === undefined) {
    definition = {};
    for (const method of desc.methods) {
      definition[method.localName] = {
        path: `/${desc.typeName}/${method.name}`,
        requestStream: method.methodKind === 'client_streaming' || method.methodKind === 'bidi_streaming',
        responseStream: method.methodKind === 'server_streaming' || method.methodKind === 'bidi_streaming',
        requestSerialize: serializer(method.input),
        // Only servers decode requests: they get the lenient decoder.
        requestDeserialize: lenientDeserializer(method.input),
        responseSerialize: serializer(method.output),
        responseDeserialize: deserializer(method.output),
      } as grpc.MethodDefinition<unknown, unknown>;
    }
    definitions.set(desc, definition);
  }
  return definition as unknown as GrpcServiceDefinition<M>;
}

/** Registers a typed implementation of a generated service on a grpc-js server. */
export function addGrpcService<M extends GenServiceMethods>(
  server: grpc.Server,
  service: GenService<M>,
  implementation: GrpcServiceImplementation<M>,
): void {
  server.addService(
    grpcServiceDefinition(service) as unknown as grpc.ServiceDefinition,
    implementation as unknown as grpc.UntypedServiceImplementation,
  );
}

const clientConstructors = new WeakMap<DescService, grpc.ServiceClientConstructor>();

/**
 * Typed client class for a generated service (grpc-js `makeGenericClientConstructor`),
 * created once per service.
 */
export function grpcClientConstructor<M extends GenServiceMethods>(service: GenService<M>): GrpcClientConstructor<M> {
  const desc = service as unknown as DescService;
  let constructor = clientConstructors.get(desc);
  if (constructor === undefined) {
    const definition = grpcServiceDefinition(service) as unknown as grpc.ServiceDefinition;
    constructor = grpc.makeGenericClientConstructor(definition, desc.typeName);
    clientConstructors.set(desc, constructor);
  }
  return constructor as unknown as GrpcClientConstructor<M>;
}

/**
 * A client for a generated service with KAIROS_CHANNEL_OPTIONS applied (any
 * `options` given override them). Close it with `client.close()`.
 */
export function createGrpcClient<M extends GenServiceMethods>(
  service: GenService<M>,
  address: string,
  credentials: grpc.ChannelCredentials,
  options: grpc.ClientOptions = {},
): GrpcClient<M> {
  const Client = grpcClientConstructor(service);
  return new Client(address, credentials, { ...KAIROS_CHANNEL_OPTIONS, ...options });
}
