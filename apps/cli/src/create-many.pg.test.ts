/**
 * `kairos jobs create-many` against a live coordinator: JSON lines in, one
 * answer per line in input order (also with several batches in flight),
 * refusals named by line, the exit code of the worst refusal.
 */
import { createTestDatabase, restClient, startCoordinatorProcess, stopAll, type CoordinatorProcess, type TestDatabase } from '@kairos/testing';
import { runCli } from './run';
import { capturedIo } from './test-support/captured-io';

describe('kairos jobs create-many', () => {
  let db: TestDatabase;
  let coordinator: CoordinatorProcess;
  let api: ReturnType<typeof restClient>;

  beforeAll(async () => {
    db = await createTestDatabase();
    coordinator = await startCoordinatorProcess({ databaseUrl: db.url });
    api = restClient(coordinator.httpUrl);
  }, 60_000);
  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });

  const later = () => new Date(Date.now() + 3_600_000).toISOString();

  it('JSON lines in, one answer per line in order, refusals named by line, exit code 2', async () => {
    const lines = [
      JSON.stringify({ task: 'report', runAt: later(), name: 'cli-1', timeoutSeconds: null }),
      '',
      '{not json',
      JSON.stringify({ task: 'report', schedule: '0 9 * * *', timezone: 'Europe/Berlin', name: 'cli-2', idempotencyKey: 'cli-k' }),
      JSON.stringify({ task: 'report', schedule: '0 9 * * *', timezone: 'Nowhere/Land', name: 'cli-3' }),
      JSON.stringify({ task: 'report', runAt: later(), name: 'cli-4' }),
    ];
    const run = async (argv: string[], stdin: string) => {
      const captured = capturedIo({ KAIROS_COORDINATOR: coordinator.grpcAddress, KAIROS_DATA_DIR: '/nonexistent-kairos-dir' }, stdin);
      const code = await runCli(argv, captured.io);
      return { code, stdout: captured.stdout(), stderr: captured.stderr() };
    };
    // Batches of two, two in flight: the answers still come out in input order.
    const json = await run(['--json', 'jobs', 'create-many', '--batch-size', '2', '--concurrency', '2'], `${lines.join('\n')}\n`);
    expect(json.code).toBe(2);
    const answers = json.stdout.trim().split('\n').map((line) => JSON.parse(line) as any);
    expect(answers.map((a) => [a.line, a.status])).toEqual([
      [1, 201],
      [3, 400],
      [4, 201],
      [5, 400],
      [6, 201],
    ]);
    expect(answers[1].error).toMatchObject({ code: 'invalid_argument', field: 'body' });
    expect(answers[3].error).toMatchObject({ code: 'invalid_argument', field: 'timezone' });
    expect(json.stderr).toContain('created 3, existing 0, refused 2');
    const made = await api.getJob(answers[2].jobId);
    expect(made.body).toMatchObject({ name: 'cli-2', timezone: 'Europe/Berlin', idempotencyKey: 'cli-k' });

    // Human output: the summary on stdout, refusals on stderr by line; a keyed repeat is "existing".
    const human = await run(['jobs', 'create-many'], `${lines[3]}\n${JSON.stringify({ task: 'report', runAt: later(), bogus: 1 })}\n`);
    expect(human.code).toBe(2);
    expect(human.stdout).toMatch(/^created 0, existing 1, refused 1 in \d+\.\d s\n$/);
    expect(human.stderr).toContain('line 2: unknown field "bogus" (field: bogus)');
    const clean = await run(['jobs', 'create-many'], `${JSON.stringify({ task: 'report', runAt: later() })}\n`);
    expect(clean).toMatchObject({ code: 0, stderr: '' });
  });

  it('refuses a batch size beyond the limit before reading anything', async () => {
    const captured = capturedIo({ KAIROS_COORDINATOR: coordinator.grpcAddress }, 'never read');
    expect(await runCli(['jobs', 'create-many', '--batch-size', '1001'], captured.io)).toBe(2);
    expect(captured.stderr()).toContain('--batch-size is at most 1000');
  });
});
