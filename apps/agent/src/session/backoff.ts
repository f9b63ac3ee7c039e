/**
 * Reconnect delays: exponential from `initialMs`, capped at `maxMs`, with
 * "equal jitter" (half the step fixed, half random) so a fleet of agents that
 * lost the same coordinator does not come back in lockstep, while no agent
 * ever retries sooner than half a step.
 */
export interface BackoffPolicy {
  readonly initialMs: number;
  readonly maxMs: number;
}

/**
 * The agent's policy: 100 ms doubling up to 1 s. A coordinator that restarts is
 * found within about a second of coming back (a refused connect costs nothing).
 */
export const RECONNECT_BACKOFF: BackoffPolicy = { initialMs: 100, maxMs: 1_000 };

/**
 * Delay before reconnect attempt number `attempt` (1 = the first retry after a
 * failure). `random` returns a number in [0, 1); inject it in tests.
 */
export function backoffDelayMs(attempt: number, policy: BackoffPolicy = RECONNECT_BACKOFF, random: () => number = Math.random): number {
  const exponent = Math.max(0, Math.min(attempt - 1, 30));
  const step = Math.min(policy.maxMs, policy.initialMs * 2 ** exponent);
  return Math.round(step / 2 + random() * (step / 2));
}
