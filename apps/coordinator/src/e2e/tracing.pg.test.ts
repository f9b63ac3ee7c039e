/**
 * Tracing (libs/tracing), with real processes and a real OTLP/HTTP (JSON)
 * receiver on loopback. With the OTEL_ environment set on a coordinator and
 * an agent, a job created under a caller's `traceparent` yields one trace:
 * create (child of the caller) -> claim -> run (on the agent) -> report, and
 * the `http` task's request carries the run span's context. With tracing off
 * (the default) nothing is exported, but the caller's context still travels,
 * unchanged, to the `http` task's request, through REST and through gRPC.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { createGrpcClient, JobService } from '@kairos/proto';
import {
  createTestDatabase,
  restClient,
  startAgentProcess,
  startCoordinatorProcess,
  stopAll,
  waitFor,
  type CoordinatorProcess,
  type TestDatabase,
} from '@kairos/testing';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const CALLER = `00-${TRACE_ID}-${CALLER_SPAN}-01`;

interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  service: string;
  attributes: Record<string, unknown>;
}

/** An OTLP/HTTP JSON trace receiver, plus an endpoint the http task calls (its traceparent header recorded). */
async function startReceiver() {
  const spans: ExportedSpan[] = [];
  const calls: Array<{ path: string; traceparent: string | undefined }> = [];
  const server = http.createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      if (request.url === '/v1/traces') {
        const message = JSON.parse(body) as {
          resourceSpans: Array<{
            resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
            scopeSpans: Array<{ spans: Array<Omit<ExportedSpan, 'service' | 'attributes'> & { attributes?: Array<{ key: string; value: Record<string, unknown> }> }> }>;
          }>;
        };
        for (const resourceSpans of message.resourceSpans) {
          const service = resourceSpans.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
          for (const scope of resourceSpans.scopeSpans) {
            for (const span of scope.spans) {
              const attributes = Object.fromEntries((span.attributes ?? []).map((a) => [a.key, Object.values(a.value)[0]]));
              spans.push({ traceId: span.traceId, spanId: span.spanId, ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}), name: span.name, service, attributes });
            }
          }
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      const traceparent = request.headers['traceparent'];
      calls.push({ path: request.url ?? '', traceparent: typeof traceparent === 'string' ? traceparent : undefined });
      response.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { port, spans, calls, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

describe('tracing', () => {
  let db: TestDatabase;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    db = await createTestDatabase();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await stopAll();
    await receiver?.close();
    await db?.drop();
  });

  const createUnder = async (coordinator: CoordinatorProcess, traceparent: string, path: string) => {
    const response = await fetch(`${coordinator.httpUrl}/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', traceparent },
      body: JSON.stringify({ task: 'http', runAt: new Date().toISOString(), payload: { url: `http://127.0.0.1:${receiver.port}${path}` } }),
    });
    expect(response.status).toBe(201);
    return ((await response.json()) as { jobId: string }).jobId;
  };
  const completed = (coordinator: CoordinatorProcess, jobId: string) =>
    waitFor(async () => (await restClient(coordinator.httpUrl).getJob(jobId)).body.state === 'COMPLETED', { timeoutMs: 30_000, description: `job ${jobId} COMPLETED` });

  test('on: create, claim, run and report form one trace under the caller, and the http request continues it', async () => {
    const otel = {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${receiver.port}/v1/traces`,
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url, name: 'traced', env: otel });
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'traced-agent', tasks: 'http', env: otel });
    const jobId = await createUnder(coordinator, CALLER, '/traced');
    await completed(coordinator, jobId);

    const byName = (name: string) => receiver.spans.find((span) => span.name === name && span.attributes['kairos.job.id'] === jobId);
    await waitFor(() => ['kairos.job.create', 'kairos.job.claim', 'kairos.job.run', 'kairos.job.report'].every((name) => byName(name) !== undefined), {
      timeoutMs: 15_000,
      description: 'the four spans of the job exported',
    });
    const [create, claim, run, report] = ['kairos.job.create', 'kairos.job.claim', 'kairos.job.run', 'kairos.job.report'].map((name) => byName(name)!);
    for (const span of [create, claim, run, report]) expect(span!.traceId).toBe(TRACE_ID);
    expect(create!.parentSpanId).toBe(CALLER_SPAN);
    expect(claim!.parentSpanId).toBe(create!.spanId);
    expect(run!.parentSpanId).toBe(claim!.spanId);
    expect(report!.parentSpanId).toBe(run!.spanId);
    expect([create!.service, claim!.service, run!.service, report!.service]).toEqual(['kairos-coordinator', 'kairos-coordinator', 'kairos-agent', 'kairos-coordinator']);
    expect(run!.attributes).toMatchObject({ 'kairos.task': 'http', 'kairos.agent.id': 'traced-agent', 'kairos.run.result': 'succeeded' });
    expect(report!.attributes).toMatchObject({ 'kairos.report.result': 'recorded', 'kairos.run.outcome': 'SUCCEEDED' });
    // The downstream call joins the trace as a child of the run.
    expect(receiver.calls.find((call) => call.path === '/traced')?.traceparent).toBe(`00-${TRACE_ID}-${run!.spanId}-01`);
    // The next test's jobs are for untraced processes only.
    await stopAll();
  }, 90_000);

  test('off: nothing is exported, and the caller context reaches the http request unchanged (REST and gRPC)', async () => {
    const exportedBefore = receiver.spans.length;
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url, name: 'untraced' });
    await startAgentProcess({ coordinator: coordinator.grpcAddress, agentId: 'untraced-agent', tasks: 'http' });
    const other = `00-${'ab'.repeat(16)}-${'cd'.repeat(8)}-01`;
    await completed(coordinator, await createUnder(coordinator, other, '/untraced-rest'));
    expect(receiver.calls.find((call) => call.path === '/untraced-rest')?.traceparent).toBe(other);

    const client = createGrpcClient(JobService, coordinator.grpcAddress, grpc.credentials.createInsecure());
    const metadata = new grpc.Metadata();
    metadata.set('traceparent', other);
    const created = await new Promise<{ jobId: string }>((resolve, reject) =>
      client.createJob(
        {
          task: 'http',
          when: { case: 'runAt', value: { seconds: BigInt(Math.floor(Date.now() / 1000)), nanos: 0 } },
          payload: { url: `http://127.0.0.1:${receiver.port}/untraced-grpc` },
        } as never,
        metadata,
        (error, value) => (error ? reject(error) : resolve(value as never)),
      ),
    );
    client.close();
    await completed(coordinator, created.jobId);
    expect(receiver.calls.find((call) => call.path === '/untraced-grpc')?.traceparent).toBe(other);
    // A malformed context is dropped, not forwarded.
    await completed(coordinator, await createUnder(coordinator, 'not-a-traceparent', '/malformed'));
    expect(receiver.calls.find((call) => call.path === '/malformed')?.traceparent).toBeUndefined();
    expect(receiver.spans.slice(exportedBefore).filter((span) => span.traceId === 'ab'.repeat(16))).toEqual([]);
  }, 90_000);
});
