/**
 * The request parsers both transports share, tested directly (no processes):
 * every refusal names its field, and accepted input comes out normalised.
 */
import {
  parseBackfill,
  parseCount,
  parseCreateJob,
  parseEditJob,
  parseExpectedVersion,
  parseListJobs,
  parseListRuns,
  parsePreview,
  ValidationError,
} from './validation';

/** The field a parser's refusal names. */
function refusedField(parse: () => unknown): string {
  try {
    parse();
  } catch (error: unknown) {
    if (error instanceof ValidationError) return error.field;
    throw error;
  }
  throw new Error('accepted');
}

describe('list parsers: one set of limits for every listing', () => {
  it('jobs: limit 1 to 1000 (default 100), state in any case', () => {
    expect(parseListJobs({})).toEqual({ limit: 100 });
    const cursor = '0190A3C4-5E6F-7A8B-9C0D-1E2F3A4B5C6D';
    expect(parseListJobs({ limit: '1000', state: 'due', cursor })).toEqual({ limit: 1000, state: 'DUE', cursor: cursor.toLowerCase() });
    for (const bad of ['c', 'not-a-cursor', '']) expect(refusedField(() => parseListJobs({ cursor: bad }))).toBe('cursor');
    for (const field of ['state', 'task', 'limit']) expect(refusedField(() => parseListJobs({ [field]: '' }))).toBe(field);
    expect(refusedField(() => parseListJobs({ state: ['DUE', 'DEAD'] }))).toBe('state');
    for (const limit of ['0', '1001', '5000', 'ten', '1.5']) expect(refusedField(() => parseListJobs({ limit }))).toBe('limit');
    expect(refusedField(() => parseListJobs({ state: 'RUNNING' }))).toBe('state');
  });

  it('runs: limit 1 to 1000 (default 1000), a numeric cursor', () => {
    expect(parseListRuns({})).toEqual({ limit: 1000, afterRunId: 0 });
    expect(parseListRuns({ limit: 2, cursor: '41' })).toEqual({ limit: 2, afterRunId: 41 });
    expect(parseListRuns({ limit: undefined, cursor: undefined })).toEqual({ limit: 1000, afterRunId: 0 });
    expect(refusedField(() => parseListRuns({ limit: 5000 }))).toBe('limit');
    for (const cursor of ['-1', 'abc', '1e400']) expect(refusedField(() => parseListRuns({ cursor }))).toBe('cursor');
  });

  it('preview count: 1 to 1000 (default 10); a query string may carry digits, a JSON body a number', () => {
    expect(parseCount(undefined)).toBe(10);
    expect(parseCount('25')).toBe(25);
    expect(refusedField(() => parseCount('25', 'body'))).toBe('count');
    for (const count of [0, 1001, 2.5, '-1']) expect(refusedField(() => parseCount(count))).toBe('count');
  });
});

describe('job parsers', () => {
  const recurring = { task: 'sleep', schedule: '0 * * * *', payload: { seconds: 1 } };

  it('create: policies, retry and their refusals', () => {
    const input = parseCreateJob({ ...recurring, misfirePolicy: 'catch-up', catchupWindowMs: 60_000, overlapPolicy: 'buffer-all', retry: { jitter: 0.5 } });
    expect(input).toMatchObject({
      misfirePolicy: 'catch-up',
      catchupWindowMs: 60_000,
      overlapPolicy: 'buffer-all',
      retry: { initialMs: null, maxMs: null, multiplier: null, jitter: 0.5 },
    });
    expect(refusedField(() => parseCreateJob({ ...recurring, retry: { initialIntervalMs: 10, maxIntervalMs: 5 } }))).toBe('retry.maxIntervalMs');
    expect(refusedField(() => parseCreateJob({ ...recurring, retry: { speed: 1 } }))).toBe('retry.speed');
    expect(refusedField(() => parseCreateJob({ ...recurring, catchupWindowMs: 60_000 }))).toBe('catchupWindowMs');
    expect(refusedField(() => parseCreateJob({ task: 'sleep', runAt: '2030-01-01T00:00:00Z', overlapPolicy: 'buffer-one' }))).toBe('overlapPolicy');
  });

  it('edit: only what is given; a zone alone re-reads the current schedule; fixed fields refused', () => {
    expect(parseEditJob({ name: null, timeoutSeconds: null }, { schedule: '0 * * * *', timezone: 'UTC', task: 'report' })).toEqual({
      name: null,
      timeoutMs: null,
    });
    expect(parseEditJob({ timezone: 'Europe/Berlin' }, { schedule: '0 9 * * *', timezone: 'UTC', task: 'report' })).toEqual({
      schedule: { expression: '0 9 * * *', timezone: 'Europe/Berlin' },
    });
    const current = { schedule: null, timezone: 'UTC', task: 'sleep' };
    expect(refusedField(() => parseEditJob({ timezone: 'Europe/Berlin' }, current))).toBe('timezone');
    expect(refusedField(() => parseEditJob({}, current))).toBe('body');
    expect(refusedField(() => parseEditJob({ task: 'http' }, current))).toBe('task');
    expect(refusedField(() => parseEditJob([], current))).toBe('body');
    // A new payload must suit the job's built-in task.
    expect(refusedField(() => parseEditJob({ payload: { seconds: 'five' } }, current))).toBe('payload.seconds');
  });

  it("create: a built-in task's payload is checked, naming the field; other tasks' payloads are not", () => {
    expect(refusedField(() => parseCreateJob({ task: 'sleep', runAt: '2030-01-01T00:00:00Z' }))).toBe('payload.seconds');
    expect(refusedField(() => parseCreateJob({ task: 'sleep', runAt: '2030-01-01T00:00:00Z', payload: { seconds: 1, extra: 2 } }))).toBe('payload.extra');
    expect(refusedField(() => parseCreateJob({ task: 'http', runAt: '2030-01-01T00:00:00Z', payload: { url: 'x', method: 'GET', body: 'b' } }))).toBe('payload.body');
    expect(refusedField(() => parseCreateJob({ task: 'exec', runAt: '2030-01-01T00:00:00Z', payload: { argv: ['/bin/true'], env: { PATH: '/tmp' } } }))).toBe(
      'payload.env.PATH',
    );
    expect(parseCreateJob({ task: 'sleep', runAt: '2030-01-01T00:00:00Z', payload: { seconds: 1 } }).payload).toEqual({ seconds: 1 });
    expect(parseCreateJob({ task: 'billing.send', runAt: '2030-01-01T00:00:00Z', payload: { anything: true } }).payload).toEqual({ anything: true });
  });

  it('an empty top-level key is named `""`, so a refusal always names a field (found by input-fuzz)', () => {
    expect(refusedField(() => parseCreateJob({ '': '\u0000' }))).toBe('""');
    expect(refusedField(() => parseCreateJob({ task: 'sleep', runAt: '2030-01-01T00:00:00Z', '': 1 }))).not.toBe('');
  });

  it('If-Match: the ETag form, a bare number, or nothing', () => {
    expect(parseExpectedVersion('"3"')).toBe(3);
    expect(parseExpectedVersion('W/"12"')).toBe(12);
    expect(parseExpectedVersion(7)).toBe(7);
    expect(parseExpectedVersion(undefined)).toBeUndefined();
    expect(parseExpectedVersion(0)).toBeUndefined();
    for (const value of ['"0"', '*', 'abc']) expect(refusedField(() => parseExpectedVersion(value))).toBe('If-Match');
  });

  it('backfill and preview ranges name the bad end', () => {
    expect(parseBackfill({ from: '2030-01-01T00:00:00Z', to: '2030-01-02T00:00:00Z' })).toEqual({
      from: new Date('2030-01-01T00:00:00Z'),
      to: new Date('2030-01-02T00:00:00Z'),
    });
    expect(refusedField(() => parseBackfill({ from: '2030-01-02T00:00:00Z', to: '2030-01-01T00:00:00Z' }))).toBe('to');
    expect(refusedField(() => parseBackfill({ to: '2030-01-01T00:00:00Z' }))).toBe('from');
    expect(refusedField(() => parsePreview({ schedule: '* * * * *', from: 'soon' }))).toBe('from');
    expect(parsePreview({ schedule: '0 0 * * *', timezone: 'Europe/Berlin' })).toMatchObject({ count: 10, from: null });
  });
});
