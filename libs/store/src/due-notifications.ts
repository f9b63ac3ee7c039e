/**
 * LISTEN for jobs becoming due. Migration 0002 fires `pg_notify('kairos_due')`
 * when a job becomes DUE (created, retried, released, triggered, resumed);
 * the channel name lives here, beside the store that owns that migration.
 *
 * One dedicated connection, reconnected with backoff. While it is down the
 * dispatcher's poll is the backstop, so a lost notification only costs
 * latency; on every (re)connect `onDue` is called once for anything that
 * became due while nobody listened.
 */
import { Client } from 'pg';

export const DUE_CHANNEL = 'kairos_due';

export interface DueListener {
  stop(): Promise<void>;
}

export function listenForDueJobs(
  connectionString: string,
  onDue: () => void,
  hooks: { onReconnected?: () => void } = {},
): DueListener {
  let client: Client | undefined;
  let stopped = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let failures = 0;

  const connect = async () => {
    if (stopped) return;
    const next = new Client({ connectionString, application_name: 'kairos-listen' });
    const retry = () => {
      if (stopped) return;
      failures++;
      clearTimeout(retryTimer);
      retryTimer = setTimeout(() => void connect(), Math.min(5_000, 100 * 2 ** Math.min(failures, 6)));
    };
    next.on('error', () => {
      next.end().catch(() => undefined);
      if (client === next) client = undefined;
      retry();
    });
    next.on('notification', () => onDue());
    try {
      await next.connect();
      await next.query(`LISTEN ${DUE_CHANNEL}`);
      if (stopped) {
        await next.end();
        return;
      }
      client = next;
      if (failures > 0) hooks.onReconnected?.();
      failures = 0;
      onDue();
    } catch {
      next.end().catch(() => undefined);
      retry();
    }
  };
  void connect();
  return {
    async stop() {
      stopped = true;
      clearTimeout(retryTimer);
      await client?.end().catch(() => undefined);
    },
  };
}
