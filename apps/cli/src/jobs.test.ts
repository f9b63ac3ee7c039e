import { writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { status } from '@grpc/grpc-js';
import { JobState, MisfirePolicy } from '@kairos/proto';
// The client's loopback JobService fake (test-only; a candidate for libs/testing).
import {
  grpcError,
  SAMPLE_JOB_ID,
  sampleJob,
  startFakeJobService,
  type FakeJobService,
} from '../../../libs/client/src/test-support/fake-job-service';
import { runCli } from './run';
import { capturedIo } from './test-support/captured-io';

describe('kairos jobs / runs / agents against a JobService on loopback', () => {
  let server: FakeJobService | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  async function setup() {
    server = await startFakeJobService();
    const fake = server;
    /** Runs kairos with --address pointing at the fake; KAIROS_* env as given. */
    async function kairos(argv: string[], env: Record<string, string> = {}) {
      const captured = capturedIo({ KAIROS_COORDINATOR: fake.address, ...env });
      const code = await runCli(argv, captured.io);
      return { code, stdout: captured.stdout(), stderr: captured.stderr() };
    }
    return { server: fake, kairos };
  }

  describe('jobs create', () => {
    it('sends a one-off job built from the flags', async () => {
      const { server, kairos } = await setup();
      const result = await kairos([
        'jobs',
        'create',
        '--task',
        'sleep',
        '--run-at',
        '2030-01-01T09:00:00Z',
        '--payload',
        '{"seconds":1}',
        '--name',
        'demo',
        '--max-attempts',
        '5',
        '--timeout-seconds',
        '30',
        '--idempotency-key',
        'k-1',
      ]);
      expect(result).toEqual({ code: 0, stdout: `created job ${SAMPLE_JOB_ID}\n`, stderr: '' });
      const request = server.lastRequest('createJob');
      expect(request.when.case).toBe('runAt');
      expect(request.when.case === 'runAt' && Number(request.when.value.seconds)).toBe(
        Date.parse('2030-01-01T09:00:00Z') / 1000,
      );
      expect(request).toMatchObject({
        task: 'sleep',
        payload: { seconds: 1 },
        name: 'demo',
        maxAttempts: 5,
        timeoutSeconds: 30,
        idempotencyKey: 'k-1',
        misfirePolicy: MisfirePolicy.UNSPECIFIED,
      });
    });

    it('sends a recurring job with zone, misfire policy and a payload file', async () => {
      const { server, kairos } = await setup();
      const dir = mkdtempSync(path.join(tmpdir(), 'kairos-cli-'));
      try {
        const file = path.join(dir, 'payload.json');
        writeFileSync(file, '{"url":"https://example.test","method":"POST"}');
        const result = await kairos([
          'jobs',
          'create',
          '--task=http',
          '--schedule',
          '*/5 * * * *',
          '--timezone',
          'Europe/Berlin',
          '--misfire-policy',
          'skip',
          '--payload-file',
          file,
        ]);
        expect(result.code).toBe(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
      expect(server.lastRequest('createJob')).toMatchObject({
        when: { case: 'schedule', value: '*/5 * * * *' },
        timezone: 'Europe/Berlin',
        misfirePolicy: MisfirePolicy.SKIP,
        payload: { url: 'https://example.test', method: 'POST' },
      });
    });

    it('prints exactly one JSON document with --json, and says when the job already existed', async () => {
      const { server, kairos } = await setup();
      server.handle({ createJob: () => ({ jobId: 'first', created: false, job: sampleJob({ id: 'first' }) }) });
      const json = await kairos(['--json', 'jobs', 'create', '--task', 'sleep', '--run-at', '2030-01-01T09:00:00Z']);
      // The shape POST /jobs answers: the job itself in the REST JSON shape.
      expect(JSON.parse(json.stdout)).toMatchObject({ jobId: 'first', created: false, job: { jobId: 'first', state: 'DUE', timeoutSeconds: 60 } });
      const human = await kairos(['jobs', 'create', '--task', 'sleep', '--run-at', '2030-01-01T09:00:00Z']);
      expect(human.stdout).toBe('job first already exists (same idempotency key and request)\n');
    });

    it.each([
      [['--payload', '[1,2]'], '--payload must be a JSON object'],
      [['--payload', '"text"'], '--payload must be a JSON object'],
      [['--payload', 'null'], '--payload must be a JSON object'],
      [['--payload', '{seconds:1}'], '--payload is not valid JSON'],
      [['--payload-file', '/nonexistent/payload.json'], '--payload-file: cannot read'],
      [['--payload', '{}', '--payload-file', 'x.json'], 'give --payload or --payload-file, not both'],
    ])('rejects %j as a usage error before any call', async (flags, message) => {
      const { server, kairos } = await setup();
      const result = await kairos(['jobs', 'create', '--task', 'sleep', '--run-at', '2030-01-01T09:00:00Z', ...flags]);
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(new RegExp(`^error: ${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      expect(server.calls).toHaveLength(0);
    });

    it.each([
      [['--task', 'sleep'], 'one of --run-at <rfc3339> or --schedule <cron> is required'],
      [['--task', 'sleep', '--run-at', '2030-01-01T09:00:00Z', '--schedule', '* * * * *'], 'not both'],
      [['--task', 'sleep', '--run-at', '2030-01-01T09:00:00Z', '--timezone', 'UTC'], '--timezone applies to --schedule only'],
      [['--task', 'sleep', '--run-at', 'tomorrow'], "option '--run-at <rfc3339>' argument 'tomorrow' is invalid"],
      [['--task', 'sleep', '--run-at', '2030-01-01T09:00:00'], 'is invalid'],
      [['--run-at', '2030-01-01T09:00:00Z'], "required option '--task <name>' not specified"],
      [['--task', 'sleep', '--run-at', '2030-01-01T09:00:00Z', '--max-attempts', '0'], 'expected a whole number ≥ 1'],
      [['--task', 'sleep', '--run-at', '2030-01-01T09:00:00Z', '--timeout-seconds', '-1'], '--timeout-seconds'],
      [['--task', 'sleep', '--schedule', '* * * * *', '--misfire-policy', 'later'], 'Allowed choices are fire-once, skip'],
    ])('rejects %j with exit code 2 before any call', async (flags, message) => {
      const { server, kairos } = await setup();
      const result = await kairos(['jobs', 'create', ...flags]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(message);
      expect(result.stderr.startsWith('error: ')).toBe(true);
      expect(server.calls).toHaveLength(0);
    });
  });

  describe('server errors', () => {
    it.each([
      [status.INVALID_ARGUMENT, 2],
      [status.NOT_FOUND, 3],
      [status.FAILED_PRECONDITION, 4],
      [status.ALREADY_EXISTS, 4],
      [status.PERMISSION_DENIED, 1],
      [status.INTERNAL, 1],
    ] as const)('gRPC status %i exits with %i', async (code, exit) => {
      const { server, kairos } = await setup();
      server.handle({ cancelJob: () => Promise.reject(grpcError(code, 'job is claimed by an agent')) });
      const result = await kairos(['jobs', 'cancel', 'j-1']);
      expect(result).toEqual({ code: exit, stdout: '', stderr: 'error: job is claimed by an agent\n' });
    });

    it('prints the field the server named', async () => {
      const { server, kairos } = await setup();
      server.handle({
        createJob: () => Promise.reject(grpcError(status.INVALID_ARGUMENT, 'unknown time zone "Mars/Olympus"', 'timezone')),
      });
      const result = await kairos(['jobs', 'create', '--task', 'x', '--schedule', '* * * * *', '--timezone', 'Mars/Olympus']);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe('error: unknown time zone "Mars/Olympus" (field: timezone)\n');
    });

    it('names the address when the coordinator is unreachable', async () => {
      const { server, kairos } = await setup();
      const address = server.address;
      await server.stop();
      const result = await kairos(['agents']);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(new RegExp(`^error: coordinator at ${address} is unavailable: `));
    });
  });

  it('sends --token, or KAIROS_TOKEN, as a bearer token', async () => {
    const { server, kairos } = await setup();
    await kairos(['jobs', 'get', 'a', '--token', 'from-flag'], { KAIROS_TOKEN: 'from-env' });
    await kairos(['jobs', 'get', 'b'], { KAIROS_TOKEN: 'from-env' });
    expect(server.calls.map((c) => c.metadata.get('authorization'))).toEqual([
      ['Bearer from-flag'],
      ['Bearer from-env'],
    ]);
  });

  it('--address wins over KAIROS_COORDINATOR', async () => {
    const { server } = await setup();
    const captured = capturedIo({ KAIROS_COORDINATOR: '127.0.0.1:1' });
    const code = await runCli(['--address', server.address, 'jobs', 'get', 'a'], captured.io);
    expect(code).toBe(0);
  });

  it('reads KAIROS_COORDINATOR like the agent; KAIROS_ADDRESS still works with a warning; KAIROS_GRPC_PORT gives 127.0.0.1:<port>', async () => {
    const { server } = await setup();
    const port = server.address.split(':')[1]!;
    const current = capturedIo({ KAIROS_COORDINATOR: server.address });
    expect(await runCli(['jobs', 'get', 'a'], current.io)).toBe(0);
    expect(current.stderr()).toBe('');
    const former = capturedIo({ KAIROS_ADDRESS: server.address });
    expect(await runCli(['jobs', 'get', 'a'], former.io)).toBe(0);
    expect(former.stderr()).toMatch(/KAIROS_ADDRESS is deprecated; set KAIROS_COORDINATOR/);
    const byPort = capturedIo({ KAIROS_GRPC_PORT: port });
    expect(await runCli(['jobs', 'get', 'a'], byPort.io)).toBe(0);
  });

  it('jobs get prints the job as fields, or as JSON', async () => {
    const { server, kairos } = await setup();
    const human = await kairos(['jobs', 'get', 'job-7']);
    expect(server.lastRequest('getJob').jobId).toBe('job-7');
    expect(human.stdout).toContain('id:                job-7\n');
    expect(human.stdout).toContain('schedule:          0 3 * * * (Europe/Berlin)\n');
    expect(human.stdout).toContain('next run:          2030-01-02T02:00:00Z\n');
    expect(human.stdout).toContain('attempt:           1/3\n');
    expect(human.stdout).toContain('payload:           {"url":"https://example.test/report","method":"POST"}\n');

    const json = await kairos(['jobs', 'get', 'job-7', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({
      jobId: 'job-7',
      state: 'DUE',
      nextRunAt: '2030-01-02T02:00:00.000Z',
      runAt: null,
      leaseGeneration: 7,
    });
  });

  it('jobs list passes filters and prints a table with the next cursor', async () => {
    const { server, kairos } = await setup();
    server.handle({ listJobs: (request) => ({ jobs: [{ ...sampleRow(), state: request.state }], nextCursor: 'c2' }) });
    const result = await kairos(['jobs', 'list', '--state', 'paused', '--task', 'http', '--limit', '10', '--cursor', 'c1']);
    expect(server.lastRequest('listJobs')).toMatchObject({ state: JobState.PAUSED, task: 'http', limit: 10, cursor: 'c1' });
    expect(result.stdout).toBe(
      [
        'ID     NAME  TASK  STATE   WHEN                       NEXT RUN              ATTEMPT',
        'job-1  -     http  PAUSED  0 3 * * * (Europe/Berlin)  2030-01-02T02:00:00Z  0/3',
        'more: add --cursor c2',
        '',
      ].join('\n'),
    );
    const json = await kairos(['jobs', 'list', '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ nextCursor: 'c2', jobs: [{ jobId: 'job-1' }] });
  });

  it('jobs list rejects an unknown state before any call', async () => {
    const { server, kairos } = await setup();
    const result = await kairos(['jobs', 'list', '--state', 'RUNNING']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('expected one of DUE, CLAIMED, COMPLETED, DEAD, PAUSED, CANCELLED');
    expect(server.calls).toHaveLength(0);
  });

  it('cancel, pause, resume and trigger call the right method', async () => {
    const { server, kairos } = await setup();
    expect((await kairos(['jobs', 'cancel', 'a'])).stdout).toBe('cancelled job a\n');
    expect(server.lastRequest('cancelJob').jobId).toBe('a');
    expect((await kairos(['jobs', 'pause', 'b'])).stdout).toBe('paused job b: PAUSED, next run 2030-01-02T02:00:00Z\n');
    expect(server.lastRequest('pauseJob').jobId).toBe('b');
    expect((await kairos(['jobs', 'resume', 'c'])).stdout).toMatch(/^resumed job c: DUE/);
    expect(server.lastRequest('resumeJob').jobId).toBe('c');
    expect((await kairos(['jobs', 'trigger', 'd'])).stdout).toMatch(/^triggered job d: DUE/);
    expect(server.lastRequest('triggerJob').jobId).toBe('d');
    expect(JSON.parse((await kairos(['jobs', 'cancel', 'e', '--json'])).stdout)).toEqual({ jobId: 'e', state: 'CANCELLED' });
    expect(JSON.parse((await kairos(['jobs', 'pause', 'f', '--json'])).stdout)).toMatchObject({ jobId: 'f', state: 'PAUSED' });
  });

  it('jobs edit sends only the flags given, with --if-version, and says when the change applies', async () => {
    const { server, kairos } = await setup();
    const result = await kairos(['jobs', 'edit', 'j-9', '--schedule', '*/5 * * * *', '--name', '', '--timeout-seconds', '0', '--retry-max-ms', '5000', '--pause-on-failure', 'yes', '--if-version', '4']);
    expect(result.stdout).toBe('updated job j-9 to version 5 (the job is running: the change applies from its next claim): DUE, next run 2030-01-02T02:00:00Z\n');
    const request = server.lastRequest('updateJob');
    expect(request).toMatchObject({ jobId: 'j-9', expectedVersion: 4, schedule: '*/5 * * * *', name: '', timeoutSeconds: 0, retry: { maxIntervalMs: 5000 }, pauseOnFailure: true });
    expect(request.timezone).toBeUndefined();
    expect(request.payload).toBeUndefined();
    const nothing = await kairos(['jobs', 'edit', 'j-9']);
    expect(nothing.code).toBe(2);
    expect(nothing.stderr).toMatch(/nothing to change/);
    server.handle({
      updateJob: () => {
        throw grpcError(status.ABORTED, 'job j-9 is at version 6, not 4');
      },
    });
    const stale = await kairos(['jobs', 'edit', 'j-9', '--name', 'x', '--if-version', '4']);
    expect(stale.code).toBe(4);
    expect(stale.stderr).toMatch(/version 6/);
  });

  it('jobs backfill sends the range, or --cancel, and refuses half a range before any call', async () => {
    const { server, kairos } = await setup();
    const started = await kairos(['jobs', 'backfill', 'j-5', '--from', '2030-01-01T00:00:00Z', '--to', '2030-01-01T03:00:00Z']);
    expect(started.stdout).toBe(
      'backfilling job j-5: 3 occurrences from 2030-01-01T00:00:00Z to 2030-01-01T03:00:00Z, then the schedule resumes at 2030-01-02T02:00:00Z\n',
    );
    expect(Number(server.lastRequest('startBackfill').from?.seconds)).toBe(Date.parse('2030-01-01T00:00:00Z') / 1000);
    expect((await kairos(['jobs', 'backfill', 'j-5', '--cancel'])).stdout).toBe('cancelled the backfill of job j-5 (the backfill run in progress finishes first)\n');
    const half = await kairos(['jobs', 'backfill', 'j-5', '--from', '2030-01-01T00:00:00Z']);
    expect(half.code).toBe(2);
    expect(server.calls.filter((c) => c.method === 'startBackfill')).toHaveLength(1);
  });

  it('jobs abort sends --stop-schedule and says which run on which agent is being stopped', async () => {
    const { server, kairos } = await setup();
    expect((await kairos(['jobs', 'abort', 'j-1'])).stdout).toBe(
      'aborting run 42 of job j-1 on agent agent-b: follow it with "kairos runs j-1"\n',
    );
    expect(server.lastRequest('abortRun')).toMatchObject({ jobId: 'j-1', stopSchedule: false });
    const json = JSON.parse((await kairos(['jobs', 'abort', 'j-2', '--stop-schedule', '--json'])).stdout);
    expect(json).toEqual({ jobId: 'j-2', runId: '42', leaseGeneration: 8, agentId: 'agent-b', requestedBy: 'oncall (token t-1)', stopSchedule: true });
    server.handle({
      abortRun: () => {
        throw grpcError(status.FAILED_PRECONDITION, 'nothing to abort: the job is DUE, not running');
      },
    });
    const refused = await kairos(['jobs', 'abort', 'j-3']);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toMatch(/nothing to abort/);
  });

  it('schedule preview prints instants, local readings and DST notes; jobs upcoming asks for the job', async () => {
    const { server, kairos } = await setup();
    const result = await kairos(['schedule', 'preview', '--schedule', '30 2 * * *', '--timezone', 'Europe/Berlin', '--count', '2', '--from', '2027-03-28T00:00:00Z']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/AT\s+LOCAL \(Europe\/Berlin\)\s+DST/);
    expect(result.stdout).toMatch(/2027-03-28T01:30:00Z\s+2027-03-28 03:30:00 \+02:00\s+shifted: 02:30:00 does not exist that day \(spring forward\)/);
    expect(result.stdout).toMatch(/2027-03-29T00:30:00Z\s+2027-03-29 02:30:00 \+02:00\s+-/);
    expect(server.lastRequest('previewSchedule')).toMatchObject({ schedule: '30 2 * * *', timezone: 'Europe/Berlin', count: 2 });
    const json = JSON.parse((await kairos(['schedule', 'preview', '--schedule', '30 2 * * *', '--json'])).stdout);
    expect(json.occurrences[0]).toMatchObject({ dst: 'gap-shifted', scheduledLocal: '2027-03-28T02:30:00' });
    expect((await kairos(['jobs', 'upcoming', 'j-4', '--count', '5'])).stdout).toBe('no upcoming occurrences\n');
    expect(server.lastRequest('listUpcoming')).toMatchObject({ jobId: 'j-4', count: 5 });
  });

  it('runs prints a table, or JSON', async () => {
    const { server, kairos } = await setup();
    const result = await kairos(['runs', 'job-1', '--limit', '2']);
    expect(server.lastRequest('listRuns')).toMatchObject({ jobId: 'job-1', limit: 2 });
    expect(result.stdout).toBe(
      [
        'RUN  ATTEMPT  OUTCOME  SCHEDULED FOR         STARTED               FINISHED              WORKER   FENCE  REASON              ERROR',
        '41   1        FAILED   2030-01-01T02:00:00Z  2030-01-01T02:00:01Z  2030-01-01T02:00:03Z  agent-a  7      -                   HTTP 503',
        '42   2        RUNNING  2030-01-01T02:00:00Z  2030-01-01T02:00:10Z  -                     agent-b  8      overlap:buffer-one  -',
        '',
      ].join('\n'),
    );
    const json = JSON.parse((await kairos(['--json', 'runs', 'job-1'])).stdout);
    expect(json.runs).toHaveLength(2);
    expect(json.nextCursor).toBeNull();
  });

  it('agents prints a table, or JSON', async () => {
    const { kairos } = await setup();
    const human = await kairos(['agents']);
    expect(human.stdout).toBe(
      [
        'AGENT    TASKS       IN FLIGHT  STATE                                   CONNECTED             LAST HEARTBEAT        COORDINATOR  VERSION',
        'agent-a  http,sleep  2/8        ready                                   2030-01-01T00:00:00Z  2030-01-01T00:10:00Z  coord-1      0.1.0',
        'agent-b  sleep       0/10000    quarantined until 2030-01-01T00:10:30Z  2030-01-01T00:00:00Z  2030-01-01T00:10:00Z  coord-1      0.1.0',
        '',
      ].join('\n'),
    );
    const json = await kairos(['agents', '--json']);
    expect(JSON.parse(json.stdout)).toEqual([
      expect.objectContaining({ agentId: 'agent-a', capacity: 8 }),
      expect.objectContaining({ agentId: 'agent-b', quarantinedUntil: '2030-01-01T00:10:30.000Z' }),
    ]);
  });

  it('usage errors: unknown command, missing argument, unknown option exit 2; --help exits 0', async () => {
    const { server, kairos } = await setup();
    expect((await kairos(['nope'])).code).toBe(2);
    expect((await kairos(['jobs', 'get'])).stderr).toContain("error: missing required argument 'id'");
    expect((await kairos(['jobs', 'get'])).code).toBe(2);
    expect((await kairos(['jobs', 'get', 'a', '--bogus'])).code).toBe(2);
    const tls = await kairos(['--tls-cert', 'client.pem', 'agents']);
    expect(tls).toMatchObject({ code: 2, stderr: 'error: mutual TLS needs both --tls-cert and --tls-key\n' });
    expect((await kairos(['--version'])).code).toBe(0);
    const help = await kairos(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: kairos');
    expect(server.calls).toHaveLength(0);
  });
});

function sampleRow() {
  return {
    id: 'job-1',
    task: 'http',
    when: { case: 'schedule' as const, value: '0 3 * * *' },
    timezone: 'Europe/Berlin',
    nextRunAt: { seconds: BigInt(Date.parse('2030-01-02T02:00:00Z') / 1000), nanos: 0 },
    maxAttempts: 3,
  };
}
