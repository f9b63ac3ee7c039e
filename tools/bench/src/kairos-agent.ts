/**
 * A Kairos agent for the benchmark: the real agent (SDK `startAgent`, gRPC
 * stream to the coordinator, session thread, heartbeats) with two custom
 * handlers, `noop` and `sleep5`, that record start times for the bench.
 *
 * Configuration is the agent's own environment (KAIROS_COORDINATOR,
 * KAIROS_AGENT_ID, KAIROS_AGENT_TASKS, KAIROS_AGENT_CAPACITY). Logging is cut
 * to warnings, like the peers' loggers in peer-worker.ts: per-run log lines
 * would measure the terminal, not the scheduler.
 */
import { agentOptionsFromEnv, startAgent, type AgentOptions } from '@kairos/agent';
import { TASK_NOOP, TASK_SLEEP } from './common';
import { noopJob, onTerminate, quietLog, reportError, reportReady, sleepJob } from './recorder';

type Logger = NonNullable<AgentOptions['logger']>;

function quietLogger(bindings: Record<string, unknown> = {}): Logger {
  const log = (level: string) => (first: unknown, second?: unknown) => {
    const message = typeof first === 'string' ? first : typeof second === 'string' ? second : '';
    quietLog('kairos-agent', level, message, { ...bindings, ...(typeof first === 'object' ? (first as object) : {}) });
  };
  const logger: Record<string, unknown> = {
    level: 'warn',
    fatal: log('fatal'),
    error: log('error'),
    warn: log('warn'),
    info: () => undefined,
    debug: () => undefined,
    trace: () => undefined,
    silent: () => undefined,
    isLevelEnabled: (level: string) => level === 'warn' || level === 'error' || level === 'fatal',
    child: (more: Record<string, unknown>) => quietLogger({ ...bindings, ...more }),
  };
  return logger as unknown as Logger;
}

/**
 * BENCH_TRACE=1 (`--trace`): note when each assignment reaches the handler
 * thread (the agent's `assigned` event), to split start lag into delivery and
 * execution. Off by default: it adds a map update per job.
 */
const trace = process.env.BENCH_TRACE === '1';
const assignedAt = new Map<string, number>();
function takeAssigned(jobId: string): number {
  if (!trace) return 0;
  const at = assignedAt.get(jobId) ?? 0;
  assignedAt.delete(jobId);
  return at;
}

async function main(): Promise<void> {
  const options = agentOptionsFromEnv(process.env, {
    handlers: {
      [TASK_NOOP]: (payload, ctx) => noopJob(payload, takeAssigned(ctx.jobId)),
      [TASK_SLEEP]: (payload, ctx) => sleepJob(payload, ctx.signal, takeAssigned(ctx.jobId)),
    },
    tasks: [TASK_NOOP, TASK_SLEEP],
    logger: quietLogger(),
  });
  const agent = await startAgent(options);
  if (trace) agent.events.on('assigned', (info) => assignedAt.set(info.jobId, Date.now()));
  agent.events.once('connected', () => reportReady());
  agent.events.on('failed', ({ error }) => {
    void reportError(error).finally(() => process.exit(1));
  });
  onTerminate(async () => {
    await agent.drain();
  });
}

main().catch((error: unknown) => {
  void reportError(error).finally(() => process.exit(1));
});
