/**
 * Workload sizes per mode. `full` is the specification; `quick` keeps
 * every workload but shrinks it to a few minutes; `smoke` exercises every code
 * path in well under a minute (CI).
 */
import type { Variant } from './common';

export type Mode = 'full' | 'quick' | 'smoke';
export type WorkloadName = 'w1' | 'w2' | 'w3' | 'w4' | 'w5' | 'w6' | 'w7' | 'w8';
export const WORKLOADS: readonly WorkloadName[] = ['w1', 'w2', 'w3', 'w4', 'w5', 'w6', 'w7', 'w8'];

/** W6 at the scale check (`--w6-10m`): 10,000,000 future jobs. */
export const W6_LARGE_FUTURE = 10_000_000;

export interface W4Plan {
  /** Jobs in the spike at the high slot count (the seed's 2,000). */
  jobs: number;
  sleepMs: number;
  /** Slot counts: the seed's "two hundred" and "twenty" workers. */
  slotsHigh: number;
  slotsLow: number;
  /** Worker processes the slots are split over. */
  processes: number;
  /** Run Kairos at the low slot count with the full spike (the eight-minute case). */
  kairosFullLow: boolean;
  /** Jobs in the scaled low-slot run (peers; and Kairos unless kairosFullLow). */
  scaledLowJobs: number;
  /** Peer variants W4 runs (each run costs about a minute). */
  peerVariants: Variant[];
}

export interface Sizes {
  mode: Mode;
  rounds: number;
  /** Worker processes and slots per process for the no-op workloads (W1, W2, W3, W5). */
  processes: number;
  slotsPerProcess: number;
  w1Jobs: number;
  /**
   * The first jobs of a W1 run, started while the freshly started processes
   * warm up (JIT, connection pools, caches), are not measured: throughput
   * and CPU per job count from the moment this many have started. The same
   * count in every mode but smoke, so quick and full measure the same
   * steady state.
   */
  w1WarmupJobs: number;
  /** A W1 run that has not drained after this long reports the rate so far (marked capped). */
  w1CapMs: number;
  /** Far-future jobs in the "million" database (W2, W3, W5, W6 at 1M, W7). */
  futureJobs: number;
  spikeSmall: number;
  spikeLarge: number;
  /**
   * An unmeasured spike of this many jobs runs on each fresh system between the cold spike and W2
   * (workloads.ts, runMillion), so that W2 and W3 measure warm processes; W3's size, so it runs both
   * spikes' paths. 0 (`--no-warmup`): none.
   */
  warmupSpikeJobs: number;
  /** How far ahead of its due time a spike is inserted. */
  spikeLeadMs: number;
  spikeTimeoutMs: number;
  /**
   * Rounds of the million-job phase (W2, W3, W5, W7), each on a freshly
   * started system: at least `rounds`. A spike's p99 moves by a quarter
   * between rounds, and the first spikes on a fresh system are slower than
   * later ones, so the quick mode measures them as the full mode does (three
   * fresh systems, one W2 and one W3 each, the median) rather than repeating
   * spikes on one system, which measured them 30-50 % faster than the full
   * mode.
   */
  spikeRounds: number;
  /** W5 runs in this many of those rounds (from the first). */
  w5Rounds: number;
  w5Samples: number;
  /** Mean gap between the due times of W5 jobs (all scheduled before the first is due). */
  w5SpacingMs: number;
  w5LeadMs: number;
  /** Future jobs in W6's small database. */
  w6SmallFuture: number;
  w6Samples: number;
  /**
   * Future jobs in W6's large database, measured once per system after the
   * rounds; 0 (every mode) = not run. `--w6-10m` sets W6_LARGE_FUTURE.
   */
  w6LargeFuture: number;
  w4: W4Plan;
  /** W8: jobs created through each system's API in batches of 1,000, with `clients` calls in flight. */
  w8: { jobs: number; clients: number };
}

export function sizesFor(mode: Mode): Sizes {
  switch (mode) {
    case 'full':
      return {
        mode,
        rounds: 3,
        processes: 2,
        slotsPerProcess: 256,
        w1Jobs: 100_000,
        w1WarmupJobs: 10_000,
        w1CapMs: 15_000,
        futureJobs: 1_000_000,
        spikeSmall: 2_000,
        spikeLarge: 10_000,
        warmupSpikeJobs: 10_000,
        spikeLeadMs: 2_000,
        spikeTimeoutMs: 180_000,
        spikeRounds: 3,
        w5Rounds: 3,
        w5Samples: 100,
        w5SpacingMs: 70,
        w5LeadMs: 1_500,
        w6SmallFuture: 10_000,
        w6Samples: 15,
        w6LargeFuture: 0,
        w4: {
          jobs: 2_000,
          sleepMs: 5_000,
          slotsHigh: 200,
          slotsLow: 20,
          processes: 4,
          kairosFullLow: true,
          scaledLowJobs: 200,
          peerVariants: ['tuned'],
        },
        w8: { jobs: 1_000_000, clients: 4 },
      };
    case 'quick':
      return {
        mode,
        rounds: 1,
        processes: 2,
        slotsPerProcess: 256,
        w1Jobs: 50_000,
        w1WarmupJobs: 10_000,
        w1CapMs: 15_000,
        // As in full mode: seeding a million takes about 10 s per system, and spikes among 100,000
        // came out a third faster than among a million (the full mode's median), too far to predict it.
        futureJobs: 1_000_000,
        spikeSmall: 2_000,
        spikeLarge: 10_000,
        warmupSpikeJobs: 10_000,
        spikeLeadMs: 2_000,
        spikeTimeoutMs: 90_000,
        spikeRounds: 3,
        w5Rounds: 1,
        w5Samples: 40,
        w5SpacingMs: 100,
        w5LeadMs: 1_000,
        w6SmallFuture: 10_000,
        w6Samples: 8,
        w6LargeFuture: 0,
        w4: {
          jobs: 2_000,
          // Half the full mode's 5 s: W4 scales with it, and at 1 s its six runs took 80 s of the five minutes.
          sleepMs: 500,
          slotsHigh: 200,
          slotsLow: 20,
          processes: 4,
          kairosFullLow: false,
          scaledLowJobs: 200,
          peerVariants: ['tuned'],
        },
        w8: { jobs: 200_000, clients: 4 },
      };
    case 'smoke':
      return {
        mode,
        rounds: 1,
        processes: 1,
        slotsPerProcess: 16,
        w1Jobs: 300,
        w1WarmupJobs: 100,
        w1CapMs: 3_000,
        futureJobs: 2_000,
        spikeSmall: 40,
        spikeLarge: 100,
        warmupSpikeJobs: 100,
        spikeLeadMs: 1_500,
        spikeTimeoutMs: 30_000,
        spikeRounds: 1,
        w5Rounds: 1,
        w5Samples: 3,
        w5SpacingMs: 50,
        w5LeadMs: 500,
        w6SmallFuture: 600,
        w6Samples: 2,
        w6LargeFuture: 0,
        w4: {
          jobs: 20,
          sleepMs: 100,
          slotsHigh: 20,
          slotsLow: 4,
          processes: 2,
          kairosFullLow: false,
          scaledLowJobs: 8,
          peerVariants: ['tuned'],
        },
        w8: { jobs: 3_000, clients: 4 },
      };
  }
}
