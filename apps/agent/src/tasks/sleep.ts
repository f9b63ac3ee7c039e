/**
 * Built-in `sleep` task: waits `seconds` (for demos and benchmarks) and ends
 * early, rejecting, when the run's signal aborts.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { sleepPayload } from '@kairos/tasks';
import { parsePayload, type TaskContext, type TaskHandler } from '../sdk';

export const sleepTask: TaskHandler = async (payload: Record<string, unknown>, ctx: TaskContext): Promise<void> => {
  const { seconds } = parsePayload(sleepPayload, payload);
  await delay(seconds * 1000, undefined, { signal: ctx.signal });
};
