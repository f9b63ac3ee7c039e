/**
 * Optional OpenTelemetry tracing. Off unless the standard OTEL_ environment
 * asks for it; then a span per step of a job's life goes to the exporter it
 * names:
 *
 *   kairos.job.create   coordinator, REST or gRPC create (child of the
 *                       caller's `traceparent`, when it sent one)
 *   kairos.job.claim    coordinator, the claim and assignment of one run
 *   kairos.job.run      agent, the handler (the `http` task passes its
 *                       context on as a `traceparent` header)
 *   kairos.job.report   coordinator, the run's outcome recorded
 *
 * The job carries its trace context from step to step as a W3C
 * `traceparent` string (stored with the job, sent with the assignment and
 * with the outcome), so the four spans form one trace across processes and
 * coordinators. With tracing off the same strings still travel: a caller's
 * `traceparent` reaches the `http` task's request unchanged.
 *
 * Switched on by OTEL_TRACES_EXPORTER (`otlp`, `console`, comma-separated;
 * `none` is off) or by an OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT); OTEL_SDK_DISABLED=true wins. The OTLP
 * exporter speaks HTTP, protobuf (`http/protobuf`, the default) or JSON
 * (`http/json`), from OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
 * OTEL_EXPORTER_OTLP_PROTOCOL; it reads its endpoint, headers and timeout
 * from the usual variables, and the batch processor its OTEL_BSP_ ones.
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the process.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import type { SpanExporter } from '@opentelemetry/sdk-trace';

/**
 * The SDK and the exporters, loaded only when tracing is switched on: with it
 * off (the default) a coordinator or agent never loads them.
 */
function sdk() {
  return {
    trace: require('@opentelemetry/sdk-trace') as typeof import('@opentelemetry/sdk-trace'),
    resources: require('@opentelemetry/resources') as typeof import('@opentelemetry/resources'),
    otlpJson: () => (require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter,
    otlpProtobuf: () => (require('@opentelemetry/exporter-trace-otlp-proto') as typeof import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter,
  };
}

export { SpanKind };

/** One step of a job's life, as a span (or nothing, with tracing off). */
export interface JobSpan {
  /** This span's context as a W3C traceparent (with tracing off: the parent's, passed through). */
  readonly traceparent: string | null;
  setAttributes(attributes: Attributes): void;
  /** Ends it; an `error` marks it failed. */
  end(options?: { error?: string }): void;
}

export interface Tracing {
  readonly enabled: boolean;
  /** A span named `name`, child of `parent` (a traceparent; invalid or null: a new trace). */
  startSpan(name: string, options?: { parent?: string | null; attributes?: Attributes; kind?: SpanKind; startTime?: number }): JobSpan;
  /** Sends what is buffered and stops (on shutdown). */
  shutdown(): Promise<void>;
}

/** A problem in the OTEL_ environment, naming the variable. */
export class TracingConfigError extends Error {
  override readonly name = 'TracingConfigError';
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`${field}: ${detail}`);
  }
}

const TRACEPARENT = /^00-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/** A W3C traceparent of version 00 with non-zero ids, or null (anything else is ignored, as the spec asks). */
export function validTraceparent(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const trimmed = value.trim().toLowerCase();
  return TRACEPARENT.test(trimmed) ? trimmed : null;
}

const passThrough = (parent: string | null): JobSpan => ({
  traceparent: parent,
  setAttributes: () => undefined,
  end: () => undefined,
});

/** Tracing switched off: spans cost nothing and contexts pass through. */
export const NO_TRACING: Tracing = {
  enabled: false,
  startSpan: (_name, options = {}) => passThrough(validTraceparent(options.parent)),
  shutdown: async () => undefined,
};

function exportersFrom(env: NodeJS.ProcessEnv): SpanExporter[] {
  const named = (env['OTEL_TRACES_EXPORTER'] ?? '').split(',').map((name) => name.trim()).filter((name) => name !== '');
  const endpoint = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] ?? env['OTEL_EXPORTER_OTLP_ENDPOINT'];
  const names = named.length > 0 ? named : endpoint ? ['otlp'] : [];
  if (names.includes('none')) return [];
  return names.map((name) => {
    switch (name) {
      case 'otlp': {
        const variable = env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'] !== undefined ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
        const protocol = env[variable] ?? 'http/protobuf';
        if (protocol === 'http/protobuf') return new (sdk().otlpProtobuf())();
        if (protocol === 'http/json') return new (sdk().otlpJson())();
        throw new TracingConfigError(variable, `must be http/protobuf or http/json (got ${JSON.stringify(protocol)}; grpc is not supported)`);
      }
      case 'console':
        return new (sdk().trace.ConsoleSpanExporter)();
      default:
        throw new TracingConfigError('OTEL_TRACES_EXPORTER', `unknown exporter ${JSON.stringify(name)} (otlp, console or none)`);
    }
  });
}

/** The batch span processor's OTEL_BSP_ variables (whole milliseconds and counts). */
function batchOptions(env: NodeJS.ProcessEnv): { scheduledDelayMillis?: number; exportTimeoutMillis?: number; maxQueueSize?: number; maxExportBatchSize?: number } {
  const read = (name: string): number | undefined => {
    const raw = env[name]?.trim();
    if (raw === undefined || raw === '') return undefined;
    if (!/^\d+$/.test(raw) || Number(raw) <= 0) throw new TracingConfigError(name, `must be a positive whole number (got ${JSON.stringify(raw)})`);
    return Number(raw);
  };
  const options = {
    scheduledDelayMillis: read('OTEL_BSP_SCHEDULE_DELAY'),
    exportTimeoutMillis: read('OTEL_BSP_EXPORT_TIMEOUT'),
    maxQueueSize: read('OTEL_BSP_MAX_QUEUE_SIZE'),
    maxExportBatchSize: read('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
  };
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}

/** Tracing as the OTEL_ environment asks (NO_TRACING when it does not). */
export function tracingFromEnv(serviceName: string, version: string, env: NodeJS.ProcessEnv = process.env): Tracing {
  if ((env['OTEL_SDK_DISABLED'] ?? '').trim().toLowerCase() === 'true') return NO_TRACING;
  const exporters = exportersFrom(env);
  if (exporters.length === 0) return NO_TRACING;
  const { trace: sdkTrace, resources } = sdk();
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': serviceName, 'service.version': version }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }));
  const batching = batchOptions(env);
  const provider = new sdkTrace.TracerProvider({
    resource,
    spanProcessors: exporters.map((exporter) => new sdkTrace.BatchSpanProcessor({ exporter, ...batching })),
  });
  return tracingWith(provider.getTracer('kairos', version), () => provider.shutdown());
}

/** Tracing on a given tracer (tests give one with an in-memory exporter). */
export function tracingWith(tracer: Tracer, shutdown: () => Promise<void> = async () => undefined): Tracing {
  const { W3CTraceContextPropagator } = require('@opentelemetry/core') as typeof import('@opentelemetry/core');
  const propagator = new W3CTraceContextPropagator();
  const contextOf = (traceparent: string | null) =>
    traceparent === null ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, { traceparent }, { get: (carrier, key) => carrier[key as 'traceparent'], keys: () => ['traceparent'] });
  const traceparentOf = (span: Span): string | null => {
    const carrier: Record<string, string> = {};
    propagator.inject(trace.setSpan(ROOT_CONTEXT, span), carrier, { set: (target, key, value) => (target[key] = value) });
    return carrier['traceparent'] ?? null;
  };
  return {
    enabled: true,
    startSpan(name, options = {}) {
      const span = tracer.startSpan(
        name,
        {
          kind: options.kind ?? SpanKind.INTERNAL,
          ...(options.attributes ? { attributes: options.attributes } : {}),
          ...(options.startTime !== undefined ? { startTime: options.startTime } : {}),
        },
        contextOf(validTraceparent(options.parent)),
      );
      return {
        traceparent: traceparentOf(span),
        setAttributes: (attributes) => void span.setAttributes(attributes),
        end(result = {}) {
          if (result.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: result.error.slice(0, 1_000) });
          span.end();
        },
      };
    },
    shutdown,
  };
}
