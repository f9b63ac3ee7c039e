/**
 * Built-in `sleep` task: waits `seconds` (for demos and benchmarks) and ends
 * early, rejecting, when the run's signal aborts.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { parsePayload, type TaskContext, type TaskHandler } from '../sdk';

/** A week: long enough for any demo, short enough to catch a unit mix-up (ms for s). */
const MAX_SLEEP_SECONDS = 7 * 24 * 3600;

const sleepPayload = z.strictObject({ seconds: z.number().min(0).max(MAX_SLEEP_SECONDS) });

export const sleepTask: TaskHandler = async (payload: Record<string, unknown>, ctx: TaskContext): Promise<void> => {
  const { seconds } = parsePayload(sleepPayload, payload);
  await delay(seconds * 1000, undefined, { signal: ctx.signal });
};
