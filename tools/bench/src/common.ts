/**
 * Types and small helpers shared by the bench process and the worker
 * processes it starts (Kairos agents and peer workers).
 */

export type SystemKey = 'kairos' | 'graphile-worker' | 'pg-boss';
/**
 * Peers run `default` and `tuned`; Kairos runs `default` and, with --secure,
 * `secure` (tokens + mTLS), with --retention, `retention` (deleting old runs).
 */
export type Variant = 'default' | 'tuned' | 'secure' | 'retention';

export const SYSTEMS: readonly SystemKey[] = ['kairos', 'graphile-worker', 'pg-boss'];

/** One system at one configuration: Kairos has only its defaults; peers run both. */
export interface SystemConfig {
  system: SystemKey;
  variant: Variant;
  /** `kairos`, `graphile-worker:default`, `pg-boss:tuned`, ... */
  id: string;
}

export function configId(system: SystemKey, variant: Variant): string {
  if (system === 'kairos') return variant === 'secure' || variant === 'retention' ? `kairos:${variant}` : 'kairos';
  return `${system}:${variant}`;
}

/**
 * A UUIDv7 made in SQL, for the rows the bench writes straight into Kairos's
 * `jobs`. The API gives every job a UUIDv7 (time-ordered: libs/store/src/jobs.ts),
 * and PostgreSQL 15 has no `uuidv7()` (18 has). The first 48 bits are the
 * clock in Unix milliseconds, then the version nibble 7, then the last 76
 * bits of a random UUID (its variant bits among them). Rows seeded with
 * `gen_random_uuid()` instead put each claim's and completion's new index
 * entries on random pages of the primary key: 12-15 % more PostgreSQL CPU per
 * job in the statement-cost probe than the API's ids (docs/benchmarks.md).
 */
export const UUID_V7_SQL =
  "(lpad(to_hex(floor(date_part('epoch', clock_timestamp()) * 1000)::bigint), 12, '0') || '7' || substr(replace(gen_random_uuid()::text, '-', ''), 14))::uuid";

/** Task names every system registers: the same two handlers everywhere. */
export const TASK_NOOP = 'noop';
export const TASK_SLEEP = 'sleep5';

/**
 * The payload every bench job carries. Short keys keep a million rows small.
 * p: the phase (workload run) the job belongs to, d: due time (epoch ms),
 * s: sleep length in ms for the sleep task (default 5000).
 */
export interface BenchPayload {
  p: number;
  d: number;
  s?: number;
}

export const RECORD_FIELDS = 5;

/** Messages from a worker process to the bench process (IPC). */
export type ChildMessage =
  | { t: 'ready' }
  /** Flat groups of RECORD_FIELDS numbers: phase, dueAtMs, startedAtMs, endedAtMs, assignedAtMs (0: not traced). */
  | { t: 'rec'; r: number[] }
  | { t: 'error'; message: string };

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Nearest-rank percentile of an ascending array (p in 0..100). */
export function percentile(sorted: ArrayLike<number>, p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function median(values: ReadonlyArray<number | null | undefined>): number | null {
  const present = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v)).sort((a, b) => a - b);
  if (present.length === 0) return null;
  const mid = Math.floor(present.length / 2);
  return present.length % 2 === 1 ? present[mid]! : (present[mid - 1]! + present[mid]!) / 2;
}

export function round(value: number | null | undefined, digits = 1): number | null {
  if (value === null || value === undefined || !Number.isFinite(value)) return null;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
