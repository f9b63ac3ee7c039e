import { status } from '@grpc/grpc-js';
import { JobState, MisfirePolicy } from '@kairos/proto';
import { createKairosClient, KairosError, type KairosClient } from './index';
import { grpcError, SAMPLE_JOB_ID, sampleJob, startFakeJobService, type FakeJobService } from './test-support/fake-job-service';

describe('createKairosClient against a JobService on loopback', () => {
  // Each test gets its own server and client; afterEach tears down whatever started.
  let server: FakeJobService | undefined;
  let client: KairosClient | undefined;
  afterEach(async () => {
    client?.close();
    await server?.stop();
    server = undefined;
    client = undefined;
  });
  async function start(options: { token?: string; deadlineMs?: number } = {}) {
    server = await startFakeJobService();
    client = createKairosClient({ address: server.address, ...options });
    return { server, client };
  }

  it('creates a one-off job, converting runAt, payload and the optional fields', async () => {
    const { server, client } = await start();
    const result = await client.createJob({
      task: 'sleep',
      runAt: '2030-01-01T09:00:00+01:00',
      payload: { seconds: 1, nested: { list: [1, 'two', null] } },
      name: 'demo',
      maxAttempts: 5,
      timeoutSeconds: 30,
      idempotencyKey: 'k-1',
    });
    expect(result).toEqual({ jobId: SAMPLE_JOB_ID, created: true, job: expect.objectContaining({ id: SAMPLE_JOB_ID }) });
    const request = server.lastRequest('createJob');
    expect(request.when.case).toBe('runAt');
    expect(request.when.case === 'runAt' && Number(request.when.value.seconds)).toBe(
      Date.parse('2030-01-01T08:00:00Z') / 1000,
    );
    expect(request.payload).toEqual({ seconds: 1, nested: { list: [1, 'two', null] } });
    expect(request).toMatchObject({
      task: 'sleep',
      name: 'demo',
      maxAttempts: 5,
      timeoutSeconds: 30,
      idempotencyKey: 'k-1',
      misfirePolicy: MisfirePolicy.UNSPECIFIED,
      timezone: '',
    });
  });

  it('creates a recurring job with timezone and misfire policy, and reports created=false', async () => {
    const { server, client } = await start();
    server.handle({ createJob: () => ({ jobId: 'existing', created: false, job: sampleJob({ id: 'existing' }) }) });
    const result = await client.createJob({
      task: 'http',
      schedule: '*/5 * * * *',
      timezone: 'America/New_York',
      misfirePolicy: 'skip',
    });
    expect(result).toEqual({ jobId: 'existing', created: false, job: expect.objectContaining({ id: 'existing' }) });
    const request = server.lastRequest('createJob');
    expect(request.when).toEqual({ case: 'schedule', value: '*/5 * * * *' });
    expect(request.timezone).toBe('America/New_York');
    expect(request.misfirePolicy).toBe(MisfirePolicy.SKIP);
    expect(request.payload).toEqual({});
  });

  it('gets a job as a plain object with Dates, string enums and nulls for unset fields', async () => {
    const { client } = await start();
    const job = await client.getJob('job-9');
    expect(job).toEqual({
      id: 'job-9',
      namespace: 'default',
      name: 'nightly report',
      task: 'http',
      runAt: null,
      schedule: '0 3 * * *',
      timezone: 'Europe/Berlin',
      payload: { url: 'https://example.test/report', method: 'POST' },
      state: 'DUE',
      nextRunAt: new Date('2030-01-02T02:00:00Z'),
      attempt: 1,
      maxAttempts: 3,
      timeoutSeconds: 60,
      misfirePolicy: 'skip',
      idempotencyKey: 'report-1',
      leaseGeneration: 7,
      leaseOwner: null,
      occurrenceAt: null,
      abort: null,
      retry: { initialIntervalMs: 500, maxIntervalMs: 60_000, multiplier: 3, jitter: 0.25 },
      jitterMs: 1500,
      pauseOnFailure: true,
      pausedReason: null,
      version: 4,
      overlapPolicy: 'skip',
      catchupWindowMs: null,
      backfill: null,
      createdAt: new Date('2030-01-01T00:00:00Z'),
      updatedAt: new Date('2030-01-01T00:00:05Z'),
    });
  });

  it('maps a one-off job without a next run and an unknown state', async () => {
    const { server, client } = await start();
    server.handle({
      getJob: () => ({
        job: {
          id: 'x',
          task: 'sleep',
          when: { case: 'runAt', value: { seconds: 1_900_000_000n, nanos: 0 } },
          state: 42 as JobState,
        },
      }),
    });
    const job = await client.getJob('x');
    expect(job).toMatchObject({
      runAt: new Date(1_900_000_000_000),
      schedule: null,
      nextRunAt: null,
      name: null,
      idempotencyKey: null,
      state: 'UNSPECIFIED',
      misfirePolicy: 'fire-once',
      payload: {},
    });
  });

  it('lists jobs with filters and passes the cursor back', async () => {
    const { server, client } = await start();
    server.handle({ listJobs: () => ({ jobs: [], nextCursor: 'page-2' }) });
    const page = await client.listJobs({ state: 'PAUSED', task: 'http', limit: 20, cursor: 'page-1' });
    expect(page).toEqual({ jobs: [], nextCursor: 'page-2' });
    expect(server.lastRequest('listJobs')).toMatchObject({
      state: JobState.PAUSED,
      task: 'http',
      limit: 20,
      cursor: 'page-1',
    });
    const unfiltered = await client.listJobs();
    expect(unfiltered.nextCursor).toBe('page-2');
    expect(server.lastRequest('listJobs')).toMatchObject({ state: JobState.UNSPECIFIED, task: '', limit: 0, cursor: '' });
  });

  it('cancels, pauses, resumes and triggers by id', async () => {
    const { server, client } = await start();
    await expect(client.cancelJob('a')).resolves.toBeUndefined();
    expect(server.lastRequest('cancelJob').jobId).toBe('a');
    expect((await client.pauseJob('b')).state).toBe('PAUSED');
    expect(server.lastRequest('pauseJob').jobId).toBe('b');
    expect((await client.resumeJob('c')).state).toBe('DUE');
    expect(server.lastRequest('resumeJob').jobId).toBe('c');
    expect((await client.triggerJob('d')).id).toBe('d');
    expect(server.lastRequest('triggerJob').jobId).toBe('d');
  });

  it('aborts a run, passing stopSchedule, and refuses a non-boolean stopSchedule before sending', async () => {
    const { server, client } = await start();
    expect(await client.abortRun('e', { stopSchedule: true })).toEqual({
      runId: '42',
      leaseGeneration: 8,
      agentId: 'agent-b',
      requestedBy: 'oncall (token t-1)',
      stopSchedule: true,
    });
    expect(server.lastRequest('abortRun')).toMatchObject({ jobId: 'e', stopSchedule: true });
    expect((await client.abortRun('f')).stopSchedule).toBe(false);
    await expect(client.abortRun('g', { stopSchedule: 'yes' as never })).rejects.toMatchObject({ code: 'invalid-argument', field: 'stopSchedule' });
  });

  it('previews a schedule (DST marks as words, empty strings as null) and lists a job\'s upcoming occurrences', async () => {
    const { server, client } = await start();
    const preview = await client.previewSchedule({ schedule: '30 2 * * *', timezone: 'Europe/Berlin', count: 2, from: '2027-03-28T00:00:00Z' });
    expect(server.lastRequest('previewSchedule')).toMatchObject({ schedule: '30 2 * * *', timezone: 'Europe/Berlin', count: 2 });
    expect(preview).toEqual({
      schedule: '30 2 * * *',
      timezone: 'Europe/Berlin',
      occurrences: [
        { at: new Date('2027-03-28T01:30:00Z'), local: '2027-03-28T03:30:00', offset: '+02:00', dst: 'gap-shifted', scheduledLocal: '2027-03-28T02:30:00' },
        { at: new Date('2027-03-29T00:30:00Z'), local: '2027-03-29T02:30:00', offset: '+02:00', dst: null, scheduledLocal: null },
      ],
    });
    await expect(client.previewSchedule({ schedule: '* * * * *', from: 'tomorrow' })).rejects.toMatchObject({ code: 'invalid-argument', field: 'from' });
    await expect(client.previewSchedule({ schedule: '' })).rejects.toMatchObject({ field: 'schedule' });
    expect(await client.listUpcoming('h', { count: 3 })).toEqual({ schedule: null, timezone: 'UTC', occurrences: [] });
    expect(server.lastRequest('listUpcoming')).toMatchObject({ jobId: 'h', count: 3 });
  });

  it('lists runs with paging', async () => {
    const { server, client } = await start();
    const page = await client.listRuns('job-1', { limit: 2, cursor: 'c' });
    expect(server.lastRequest('listRuns')).toMatchObject({ jobId: 'job-1', limit: 2, cursor: 'c' });
    expect(page.nextCursor).toBeNull();
    expect(page.runs).toEqual([
      {
        runId: '41',
        jobId: 'job-1',
        attempt: 1,
        leaseGeneration: 7,
        scheduledFor: new Date('2030-01-01T02:00:00Z'),
        startedAt: new Date('2030-01-01T02:00:01Z'),
        finishedAt: new Date('2030-01-01T02:00:03Z'),
        outcome: 'FAILED',
        workerId: 'agent-a',
        error: 'HTTP 503',
        abortedBy: null,
        reason: null,
      },
      {
        runId: '42',
        jobId: 'job-1',
        attempt: 2,
        leaseGeneration: 8,
        scheduledFor: new Date('2030-01-01T02:00:00Z'),
        startedAt: new Date('2030-01-01T02:00:10Z'),
        finishedAt: null,
        outcome: 'RUNNING',
        workerId: 'agent-b',
        error: null,
        abortedBy: null,
        reason: 'overlap:buffer-one',
      },
    ]);
  });

  it('lists agents', async () => {
    const { client } = await start();
    expect(await client.listAgents()).toEqual([
      {
        agentId: 'agent-a',
        tasks: ['http', 'sleep'],
        capacity: 8,
        inFlight: 2,
        connectedAt: new Date('2030-01-01T00:00:00Z'),
        lastHeartbeatAt: new Date('2030-01-01T00:10:00Z'),
        draining: false,
        version: '0.1.0',
        coordinatorId: 'coord-1',
        namespace: 'default',
        quarantinedUntil: null,
        probation: false,
      },
      expect.objectContaining({ agentId: 'agent-b', quarantinedUntil: new Date('2030-01-01T00:10:30Z'), probation: false }),
    ]);
  });

  it('sends the bearer token on every call, and no authorization without one', async () => {
    const { server, client } = await start({ token: 's3cret' });
    await client.getJob('a');
    await client.listAgents();
    expect(server.calls.map((c) => c.metadata.get('authorization'))).toEqual([['Bearer s3cret'], ['Bearer s3cret']]);

    const anonymous = createKairosClient({ address: server.address });
    try {
      await anonymous.getJob('a');
    } finally {
      anonymous.close();
    }
    expect(server.calls.at(-1)?.metadata.get('authorization')).toEqual([]);
  });

  it.each([
    [status.INVALID_ARGUMENT, 'invalid-argument'],
    [status.NOT_FOUND, 'not-found'],
    [status.FAILED_PRECONDITION, 'failed-precondition'],
    [status.ALREADY_EXISTS, 'already-exists'],
    [status.UNAUTHENTICATED, 'unauthenticated'],
    [status.PERMISSION_DENIED, 'permission-denied'],
    [status.UNAVAILABLE, 'unavailable'],
    [status.INTERNAL, 'internal'],
    [status.RESOURCE_EXHAUSTED, 'unknown'],
  ] as const)('maps gRPC status %i to %s', async (code, expected) => {
    const { server, client } = await start();
    server.handle({ cancelJob: () => Promise.reject(grpcError(code, 'nope')) });
    const error = await client.cancelJob('a').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KairosError);
    expect(error).toMatchObject({ code: expected, message: 'nope', field: undefined });
  });

  it('reads the offending field from the kairos-field trailer', async () => {
    const { server, client } = await start();
    server.handle({
      createJob: () => {
        throw grpcError(status.INVALID_ARGUMENT, 'schedule: expected 5 or 6 fields', 'schedule');
      },
    });
    const error = await client.createJob({ task: 'http', schedule: '* *' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'invalid-argument', field: 'schedule', message: 'schedule: expected 5 or 6 fields' });
    expect((error as KairosError).cause).toMatchObject({ code: status.INVALID_ARGUMENT });
  });

  it('fails with deadline-exceeded when the server does not answer in time', async () => {
    const { server, client } = await start({ deadlineMs: 50 });
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    server.handle({ listAgents: () => held.then(() => ({ agents: [] })) });
    await expect(client.listAgents()).rejects.toMatchObject({ code: 'deadline-exceeded' });
    release();
  });

  it('fails with unavailable when nothing listens', async () => {
    const { server: stopped } = await start();
    const address = stopped.address;
    await stopped.stop();
    const lonely = createKairosClient({ address, deadlineMs: 2_000 });
    try {
      await expect(lonely.listAgents()).rejects.toMatchObject({ code: 'unavailable' });
    } finally {
      lonely.close();
    }
  });

  it.each([
    [{ task: 'sleep', runAt: 'tomorrow' }, 'runAt'],
    [{ task: 'sleep', runAt: '2030-01-01T09:00:00' }, 'runAt'],
    [{ task: 'sleep', runAt: new Date(Number.NaN) }, 'runAt'],
    [{ task: 'sleep', runAt: '2030-01-01T09:00:00Z', schedule: '* * * * *' }, 'runAt'],
    [{ task: 'sleep' }, 'runAt'],
    [{ task: '', runAt: new Date() }, 'task'],
    [{ task: 'sleep', runAt: new Date(), payload: [1, 2] }, 'payload'],
    [{ task: 'sleep', runAt: new Date(), payload: { n: 1n } }, 'payload'],
    [{ task: 'sleep', runAt: new Date(), maxAttempts: -1 }, 'maxAttempts'],
    [{ task: 'sleep', runAt: new Date(), timeoutSeconds: 1.5 }, 'timeoutSeconds'],
    [{ task: 'sleep', schedule: '* * * * *', misfirePolicy: 'later' }, 'misfirePolicy'],
  ])('refuses %j before sending anything (field %s)', async (input, field) => {
    const { server, client } = await start();
    // The inputs are deliberately outside the declared type.
    const error = await client.createJob(input as never).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'invalid-argument', field });
    expect(server.calls).toHaveLength(0);
  });

  it('refuses an empty job id and a bad listing filter before sending anything', async () => {
    const { server, client } = await start();
    await expect(client.getJob('')).rejects.toMatchObject({ code: 'invalid-argument', field: 'jobId' });
    await expect(client.listJobs({ state: 'RUNNING' as never })).rejects.toMatchObject({ field: 'state' });
    await expect(client.listRuns('j', { limit: -1 })).rejects.toMatchObject({ field: 'limit' });
    expect(server.calls).toHaveLength(0);
  });

  it('rejects half a client certificate pair', () => {
    expect(() => createKairosClient({ address: '127.0.0.1:1', tls: { certPem: 'x' } })).toThrow(
      expect.objectContaining({ code: 'invalid-argument', field: 'tls.keyPem' }),
    );
    expect(() => createKairosClient({ address: '' })).toThrow(expect.objectContaining({ field: 'address' }));
  });
});
