/** A TaskContext for calling task handlers directly in tests. */
import type { TaskContext } from '../sdk';

export function taskContext(overrides: Partial<TaskContext> = {}): TaskContext {
  return {
    signal: new AbortController().signal,
    attempt: 1,
    maxAttempts: 3,
    fencingToken: 42n,
    jobId: 'job-1',
    runId: 'run-1',
    scheduledFor: new Date(0),
    ...overrides,
  };
}
