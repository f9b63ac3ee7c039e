import { pino } from 'pino';
import { classifyRun, errorText, Executor, type RunResult } from './executor';
import { TaskAbortedError, type TaskContext, type TaskHandler } from '../sdk';
import type { LeaseOffer } from './thread-messages';
import { waitFor } from '../test-support/wait-for';

function offer(task: string, overrides: Partial<LeaseOffer> = {}): LeaseOffer {
  return {
    jobId: `job-${task}`,
    generation: 7n,
    runId: 'run-1',
    task,
    payloadJson: '{"n":1}',
    attempt: 2,
    maxAttempts: 5,
    timeoutMs: 0,
    scheduledForMs: Date.UTC(2030, 0, 1),
    ...overrides,
  };
}

function setup(handlers: Record<string, TaskHandler>) {
  const decided: { jobId: string; result: RunResult }[] = [];
  const started: string[] = [];
  const logger = pino({ level: 'silent' });
  const executor = new Executor({
    handlers,
    logger,
    hooks: {
      onStarted: (o) => started.push(o.jobId),
      onDecided: (o, result) => decided.push({ jobId: o.jobId, result }),
    },
  });
  return { executor, decided, started };
}

describe('classifyRun', () => {
  it('maps every way a run can end to exactly one result', () => {
    expect(classifyRun({ kind: 'resolved' })).toEqual({ kind: 'succeeded' });
    expect(classifyRun({ kind: 'rejected', error: new Error('boom') })).toEqual({ kind: 'failed', error: 'boom' });
    expect(classifyRun({ kind: 'aborted', cause: { kind: 'timeout', timeoutMs: 50 } })).toEqual({
      kind: 'timed-out',
      error: 'timed out after 50 ms',
    });
    expect(classifyRun({ kind: 'aborted', cause: { kind: 'lease-lost', reason: 'trust-window' } })).toEqual({
      kind: 'lease-lost',
      reason: 'trust-window',
    });
    expect(classifyRun({ kind: 'aborted', cause: { kind: 'drain-grace', graceMs: 10 } }).kind).toBe('cancelled');
    expect(classifyRun({ kind: 'aborted', cause: { kind: 'closed' } }).kind).toBe('cancelled');
    expect(classifyRun({ kind: 'resolved' }, { timeoutMs: 10, elapsedMs: 25 }).kind).toBe('timed-out');
  });

  it('describes thrown values with their causes, bounded', () => {
    expect(errorText(new Error('outer', { cause: new Error('inner') }))).toBe('outer: inner');
    expect(errorText('plain')).toBe('plain');
    expect(errorText({ code: 1 })).toBe('{"code":1}');
    expect(errorText(new Error('x'.repeat(10_000))).length).toBe(4_096);
  });
});

describe('Executor', () => {
  it('gives the handler its payload and context, and reports success', async () => {
    let seen: unknown;
    const { executor, decided, started } = setup({
      probe: async (payload, ctx) => {
        seen = { payload, ...ctx, signal: ctx.signal.aborted };
      },
    });
    executor.start(offer('probe'));
    expect(started).toEqual(['job-probe']);
    await executor.whenIdle();
    expect(decided).toEqual([{ jobId: 'job-probe', result: { kind: 'succeeded' } }]);
    expect(seen).toMatchObject({
      payload: { n: 1 },
      signal: false,
      attempt: 2,
      maxAttempts: 5,
      fencingToken: 7n,
      jobId: 'job-probe',
      runId: 'run-1',
      scheduledFor: new Date(Date.UTC(2030, 0, 1)),
    });
  });

  it('the context: traceparent only when the run has one, one signal and one bound child logger per run, made on first read', async () => {
    const contexts: TaskContext[] = [];
    const { executor } = setup({
      probe: async (_payload, ctx) => {
        contexts.push(ctx);
      },
    });
    executor.start(offer('probe', { jobId: 'plain' }));
    executor.start(offer('probe', { jobId: 'traced', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' }));
    await executor.whenIdle();
    const [plain, traced] = contexts;
    expect('traceparent' in plain!).toBe(false);
    expect(Object.keys(plain!).sort()).toEqual(['attempt', 'fencingToken', 'jobId', 'maxAttempts', 'runId', 'scheduledFor']);
    expect(traced!.traceparent).toBe('00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01');
    expect(plain!.signal).toBe(plain!.signal);
    expect(plain!.signal).not.toBe(traced!.signal);
    expect(plain!.logger).toBe(plain!.logger);
    expect(plain!.logger?.bindings()).toMatchObject({ jobId: 'plain', runId: 'run-1', attempt: 2, task: 'probe' });
  });

  it('fails a run whose payload text is not a JSON object, without calling the handler', async () => {
    let called = false;
    const { executor, decided } = setup({
      probe: async () => {
        called = true;
      },
    });
    executor.start(offer('probe', { jobId: 'array', payloadJson: '[1]' }));
    executor.start(offer('probe', { jobId: 'garbled', payloadJson: '{"n":' }));
    await executor.whenIdle();
    expect(called).toBe(false);
    expect(decided).toEqual([
      { jobId: 'array', result: { kind: 'failed', error: `the job's payload is not a JSON object: [1]` } },
      { jobId: 'garbled', result: { kind: 'failed', error: expect.stringContaining('JSON') } },
    ]);
  });

  it('reports a thrown error (also a synchronous throw) as failed', async () => {
    const { executor, decided } = setup({
      async: async () => {
        throw new Error('no luck');
      },
      sync: (() => {
        throw new Error('sync throw');
      }) as TaskHandler,
    });
    executor.start(offer('async'));
    executor.start(offer('sync'));
    await executor.whenIdle();
    expect(decided.map((d) => d.result)).toEqual(
      expect.arrayContaining([
        { kind: 'failed', error: 'sync throw' },
        { kind: 'failed', error: 'no luck' },
      ]),
    );
    expect(decided).toHaveLength(2);
  });

  it('times out at the deadline even when the handler ignores its signal, and discards its late result', async () => {
    let release: () => void = () => {};
    let reason: unknown;
    const { executor, decided } = setup({
      stubborn: (_payload, ctx) =>
        new Promise<void>((resolve) => {
          release = resolve;
          ctx.signal.addEventListener('abort', () => (reason = ctx.signal.reason));
        }),
    });
    executor.start(offer('stubborn', { timeoutMs: 30 }));
    await executor.whenIdle();
    expect(decided).toEqual([{ jobId: 'job-stubborn', result: { kind: 'timed-out', error: 'timed out after 30 ms' } }]);
    expect(reason).toBeInstanceOf(TaskAbortedError);
    expect((reason as TaskAbortedError).kind).toBe('timeout');
    release();
    await new Promise((resolve) => setImmediate(resolve));
    expect(decided).toHaveLength(1);
  });

  it('gives a handler that reads its signal only after an abort a signal that is already aborted', async () => {
    let context: TaskContext | undefined;
    const { executor, decided } = setup({
      late: (_payload, ctx) => {
        context = ctx; // the signal is not read yet
        return new Promise<void>(() => {});
      },
    });
    executor.start(offer('late'));
    expect(executor.abort('job-late@7', { kind: 'closed' })).toBe(true);
    expect(decided).toEqual([{ jobId: 'job-late', result: { kind: 'cancelled', error: 'cancelled: the agent was closed' } }]);
    const signal = context!.signal;
    expect(signal.aborted).toBe(true);
    expect(signal.reason).toBeInstanceOf(TaskAbortedError);
    expect((signal.reason as TaskAbortedError).kind).toBe('closed');
    expect(context!.signal).toBe(signal); // one signal per run, however often it is read
  });

  it('classifies a handler that blocked the thread past its timeout as timed out', async () => {
    const { executor, decided } = setup({
      busy: async () => {
        const until = performance.now() + 60;
        while (performance.now() < until) {
          // burn CPU without yielding, so the timeout timer cannot fire
        }
      },
    });
    executor.start(offer('busy', { timeoutMs: 20 }));
    await executor.whenIdle();
    expect(decided[0]?.result.kind).toBe('timed-out');
  });

  it('aborts on a lost lease with a lease-lost result, once', async () => {
    let reason: unknown;
    const { executor, decided } = setup({
      wait: (_payload, ctx) =>
        new Promise<void>((_resolve, reject) => {
          ctx.signal.addEventListener('abort', () => {
            reason = ctx.signal.reason;
            reject(new Error('stopped'));
          });
        }),
    });
    executor.start(offer('wait'));
    expect(executor.abort('job-wait@7', { kind: 'lease-lost', reason: 'stale-generation' })).toBe(true);
    expect(executor.abort('job-wait@7', { kind: 'timeout', timeoutMs: 1 })).toBe(false);
    await waitFor('abort reason', () => reason);
    expect(decided).toEqual([{ jobId: 'job-wait', result: { kind: 'lease-lost', reason: 'stale-generation' } }]);
    expect((reason as TaskAbortedError).kind).toBe('lease-lost');
  });

  it('fails a run whose task has no handler', async () => {
    const { executor, decided } = setup({});
    executor.start(offer('missing'));
    await executor.whenIdle();
    expect(decided[0]?.result).toEqual({ kind: 'failed', error: 'no handler registered for task "missing"' });
  });
});
