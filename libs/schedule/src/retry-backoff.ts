/**
 * Retry delay after a failed attempt: exponential, capped, deterministic.
 * Callers that want jitter add it themselves; keeping it out of here keeps the
 * function pure and its tests exact.
 */
const DEFAULT_BASE_MS = 1000;
const DEFAULT_CAP_MS = 3_600_000;

function requireNonNegative(name: string, value: number): void {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a finite number >= 0, got ${value}`);
}

/**
 * Delay before retrying after attempt `attempt` (1-based: the attempt that just
 * failed): min(baseMs * 2^(attempt-1), capMs). Defaults: base 1 s, cap 1 h.
 */
export function retryBackoffMs(attempt: number, opts: { baseMs?: number; capMs?: number } = {}): number {
  const baseMs = opts.baseMs ?? DEFAULT_BASE_MS;
  const capMs = opts.capMs ?? DEFAULT_CAP_MS;
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError(`attempt must be an integer >= 1, got ${attempt}`);
  requireNonNegative('baseMs', baseMs);
  requireNonNegative('capMs', capMs);
  // 2 ** n overflows to Infinity for large n, and min() then picks the cap.
  return Math.min(baseMs * 2 ** (attempt - 1), capMs);
}
