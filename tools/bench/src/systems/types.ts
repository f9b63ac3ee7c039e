import type { Pool } from 'pg';
import type { Collector } from '../collector';
import type { SystemKey, Variant } from '../common';

/** A batch of bench jobs to insert. */
export interface JobBatch {
  task: string;
  count: number;
  phase: number;
  /** Due time of the first job (epoch ms). */
  dueAtMs: number;
  /** Due times spread at random over [dueAtMs, dueAtMs + spreadMs); 0 = all at dueAtMs. */
  spreadMs?: number;
  /** Sleep length for the sleep task. */
  sleepMs?: number;
}

export type WorkloadKind = 'noop' | 'sleep';

export interface StartOptions {
  url: string;
  variant: Variant;
  processes: number;
  slotsPerProcess: number;
  tasks: string[];
  workload: WorkloadKind;
  collector: Collector;
  /** Write V8 CPU profiles of every process here (--cpu-prof). */
  profileDir?: string;
  /** Record when each job reaches the worker process (--trace; Kairos agents only). */
  trace?: boolean;
  label: string;
}

export interface RunningSystem {
  /** Options each process ran with (for the results file). */
  readonly options: Record<string, unknown>;
  /** The Kairos coordinator's pid (peers have none). */
  readonly coordinatorPid: number | null;
  /** The Kairos coordinator's gRPC host:port and REST base URL (peers have none). */
  readonly coordinatorAddress?: { grpc: string; http: string };
  workerPids(): number[];
  /** Schedules one job through the system's client API (W5). */
  scheduleOne(phase: number, dueAtMs: number): Promise<void>;
  stop(): Promise<void>;
}

export interface Driver {
  readonly system: SystemKey;
  /** Installs the system's schema into an empty database. */
  prepare(url: string): Promise<void>;
  /** Inserts jobs through the system's fastest bulk path (see docs/benchmarks.md). */
  insert(url: string, batch: JobBatch): Promise<void>;
  /** Jobs due by now and not yet durably completed. */
  pending(pool: Pool): Promise<number>;
  /**
   * Diagnostics, where the system records it: for jobs due at `dueAtMs`, the
   * lag between the due time and the claim (sorted, ms). Kairos only (runs.started_at).
   */
  claimLags?(pool: Pool, dueAtMs: number): Promise<number[]>;
  /** Deletes every job due by now (W6 clean-up). */
  purgeDue(url: string): Promise<void>;
  /** Options the system will run with (also returned by start). */
  describe(options: Omit<StartOptions, 'collector' | 'url' | 'label'>): Record<string, unknown>;
  start(options: StartOptions): Promise<RunningSystem>;
  /**
   * W6: the system's own 500-row claim statement against the current database
   * (500 due jobs present), each run in a transaction that is rolled back, so
   * every sample claims the same rows. Returns ms per sample.
   */
  claim500(url: string, samples: number): Promise<number[]>;
}
