import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { NO_TRACING, TracingConfigError, tracingFromEnv, tracingWith, validTraceparent } from './index';

const CALLER = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('validTraceparent', () => {
  test.each([
    [CALLER, CALLER],
    [` ${CALLER.toUpperCase()} `, CALLER],
    ['00-00000000000000000000000000000000-00f067aa0ba902b7-01', null], // zero trace id
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', null], // zero span id
    ['01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', null], // a version this does not know
    ['00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7', null],
    ['garbage', null],
    [42, null],
    [undefined, null],
  ])('%j -> %j', (value, expected) => {
    expect(validTraceparent(value)).toBe(expected);
  });
});

describe('tracing off', () => {
  test('is the default, and spans pass the parent through unchanged', () => {
    const tracing = tracingFromEnv('kairos-test', '0.0.0', {});
    expect(tracing.enabled).toBe(false);
    expect(tracing.startSpan('x', { parent: CALLER }).traceparent).toBe(CALLER);
    expect(tracing.startSpan('x', { parent: 'not one' }).traceparent).toBeNull();
    expect(NO_TRACING.startSpan('x').traceparent).toBeNull();
  });

  test('OTEL_SDK_DISABLED wins over an exporter, and `none` is off', () => {
    expect(tracingFromEnv('t', '0', { OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'console' }).enabled).toBe(false);
    expect(tracingFromEnv('t', '0', { OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' }).enabled).toBe(false);
  });

  test('an OTLP endpoint alone switches it on', async () => {
    const tracing = tracingFromEnv('t', '0', { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:9/v1/traces' });
    expect(tracing.enabled).toBe(true);
    await tracing.shutdown();
  });

  test.each([
    [{ OTEL_TRACES_EXPORTER: 'zipkin' }, 'OTEL_TRACES_EXPORTER'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'carrier-pigeon' }, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'],
    [{ OTEL_TRACES_EXPORTER: 'console', OTEL_BSP_SCHEDULE_DELAY: 'soon' }, 'OTEL_BSP_SCHEDULE_DELAY'],
  ])('a bad environment %j is refused naming %s', (env, field) => {
    expect(() => tracingFromEnv('t', '0', env)).toThrow(TracingConfigError);
    expect(() => tracingFromEnv('t', '0', env)).toThrow(new RegExp(`^${field}: `));
  });
});

describe('tracing on', () => {
  test('a span is a child of the given traceparent, and its own traceparent names it', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const tracing = tracingWith(provider.getTracer('test'));
    const create = tracing.startSpan('kairos.job.create', { parent: CALLER, attributes: { 'kairos.task': 'http' } });
    const run = tracing.startSpan('kairos.job.run', { parent: create.traceparent });
    run.end({ error: 'boom' });
    create.end();
    const [first, second] = exporter.getFinishedSpans();
    expect(second!.name).toBe('kairos.job.create');
    expect(second!.spanContext().traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    expect(second!.parentSpanContext?.spanId).toBe('00f067aa0ba902b7');
    expect(second!.attributes['kairos.task']).toBe('http');
    expect(create.traceparent).toBe(`00-4bf92f3577b34da6a3ce929d0e0e4736-${second!.spanContext().spanId}-01`);
    expect(first!.name).toBe('kairos.job.run');
    expect(first!.parentSpanContext?.spanId).toBe(second!.spanContext().spanId);
    expect(first!.status).toMatchObject({ code: 2, message: 'boom' });
    // No parent (or an invalid one): a trace of its own.
    const root = tracing.startSpan('x', { parent: 'nonsense' });
    expect(validTraceparent(root.traceparent)).not.toBeNull();
    expect(root.traceparent!.slice(3, 35)).not.toBe('4bf92f3577b34da6a3ce929d0e0e4736');
    await provider.shutdown();
  });
});
