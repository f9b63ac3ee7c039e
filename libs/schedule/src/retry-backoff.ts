/**
 * Retry delay after a failed attempt: exponential, capped, deterministic.
 * Jitter is deterministic too (`jittered`, with a fraction from
 * `stableFraction`), so every coordinator computes the same delay and tests
 * stay exact.
 */
import { createHash } from 'node:crypto';

const DEFAULT_BASE_MS = 1000;
const DEFAULT_CAP_MS = 3_600_000;

function requireNonNegative(name: string, value: number): void {
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a finite number >= 0, got ${value}`);
}

/**
 * Delay before retrying after attempt `attempt` (1-based: the attempt that just
 * failed): min(baseMs * multiplier^(attempt-1), capMs). Defaults: base 1 s,
 * multiplier 2, cap 1 h.
 */
export function retryBackoffMs(attempt: number, opts: { baseMs?: number; capMs?: number; multiplier?: number } = {}): number {
  const baseMs = opts.baseMs ?? DEFAULT_BASE_MS;
  const capMs = opts.capMs ?? DEFAULT_CAP_MS;
  const multiplier = opts.multiplier ?? 2;
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError(`attempt must be an integer >= 1, got ${attempt}`);
  requireNonNegative('baseMs', baseMs);
  requireNonNegative('capMs', capMs);
  if (!Number.isFinite(multiplier) || multiplier < 1) throw new RangeError(`multiplier must be a finite number >= 1, got ${multiplier}`);
  // multiplier ** n overflows to Infinity for large n, and min() then picks the cap.
  return Math.min(Math.round(baseMs * multiplier ** (attempt - 1)), capMs);
}

/**
 * `delayMs` shortened by up to `jitter` (0 to 1) of itself, by `fraction` (in
 * [0, 1), from `stableFraction`): jitter 0.2 spreads retries over 80–100 % of
 * the delay, never past the cap.
 */
export function jittered(delayMs: number, jitter: number, fraction: number): number {
  if (!Number.isFinite(jitter) || jitter < 0 || jitter > 1) throw new RangeError(`jitter must be between 0 and 1, got ${jitter}`);
  return Math.round(delayMs * (1 - jitter * fraction));
}

/**
 * A fraction in [0, 1) that depends only on `parts` (the first 48 bits of
 * their SHA-256): the same job, occurrence and attempt get the same jitter on
 * every coordinator and in every test, and different jobs spread evenly.
 */
export function stableFraction(...parts: ReadonlyArray<string | number>): number {
  const digest = createHash('sha256').update(parts.join('\u0000')).digest();
  return digest.readUIntBE(0, 6) / 2 ** 48;
}
