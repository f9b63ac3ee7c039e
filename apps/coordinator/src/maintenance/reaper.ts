/**
 * The lease reaper: every coordinator runs one, jittered, so a dead agent's
 * jobs come back even if other coordinators are down. Reapers on several
 * coordinators share the work (SKIP LOCKED in lease.reapExpired). The same pass
 * moves late `skip` and `catch-up` jobs on (lease.skipMisfired), and aborts
 * the runs of `cancel-other` jobs whose next occurrence has come due
 * (lease.abortOverlapped).
 */
import type { Logger } from 'pino';
import type { ReapResult, Store } from '@kairos/store';
import { periodic, type Periodic } from './periodic';

export interface Reaper {
  start(): void;
  stop(): Promise<void>;
}

export function createReaper(deps: {
  store: Store;
  intervalMs: number;
  misfireThresholdMs: number;
  logger: Logger;
  onSkipped: () => void;
  /** Counts occurrences recorded SKIPPED by the reaper's settlements and misfire moves. */
  onSkippedOccurrences: (count: number) => void;
  onExpired: (expired: ReapResult['expired']) => void;
}): Reaper {
  const loop: Periodic = periodic(deps.intervalMs, tick, deps.logger, 'reaper');

  async function tick(): Promise<void> {
    // Drain in batches: after an outage many leases may have lapsed at once.
    for (;;) {
      const { expired, skipped } = await deps.store.lease.reapExpired({ limit: 1000 });
      if (skipped > 0) deps.onSkippedOccurrences(skipped);
      if (expired.length > 0) {
        deps.logger.warn({ count: expired.length, jobs: expired.slice(0, 20) }, 'leases expired: runs marked LEASE_EXPIRED');
        deps.onExpired(expired);
      }
      if (expired.length < 1000 || loop.stopped) break;
    }
    const { skipped, occurrences } = await deps.store.lease.skipMisfired({ thresholdMs: deps.misfireThresholdMs });
    if (occurrences > 0) deps.onSkippedOccurrences(occurrences);
    if (skipped > 0) {
      deps.logger.info({ count: skipped }, 'late skip and catch-up jobs moved on (SKIPPED runs recorded)');
      deps.onSkipped();
    }
    const { aborted } = await deps.store.lease.abortOverlapped();
    if (aborted > 0) deps.logger.info({ count: aborted }, 'overlap policy cancel-other: runs aborted for a newer occurrence');
  }

  return { start: () => loop.start(), stop: () => loop.stop() };
}
