/**
 * LISTEN for what other coordinators' writes mean to this one, on one
 * dedicated connection, reconnected with backoff:
 *
 * - `kairos_due` (migration 0002's trigger): a job became DUE (created,
 *   retried, released, triggered, resumed). While the connection is down the
 *   dispatcher's poll is the backstop, so a lost notification only costs
 *   latency; on every (re)connect `onDue` is called once for anything that
 *   became due while nobody listened.
 * - `kairos_abort` (lease/abort.ts): an operator aborted the run holding a
 *   lease; the payload is `<job id>:<generation>`. The coordinator serving the
 *   holding agent sends it a Revoke at once. A lost notification only costs
 *   latency too: every renewal of an aborted lease tells the agent as well.
 *
 * - `kairos_withdraw` (lease/withdraw.ts): a user's cancel, pause or edit
 *   asks for a pre-dispatched lease back; the payload is `<job id>:<generation>`.
 *   The coordinator serving the holding agent sends it a Withdraw. A lost
 *   notification costs the requester its bounded wait (then a 409).
 *
 * The channel names live here, beside the store that sends them.
 */
import { Client } from 'pg';

export const DUE_CHANNEL = 'kairos_due';
export const ABORT_CHANNEL = 'kairos_abort';
export const WITHDRAW_CHANNEL = 'kairos_withdraw';

export interface ChangeHandlers {
  /** A job may have become due. */
  onDue(): void;
  /** The run holding lease (jobId, generation) was aborted. */
  onAbort?(lease: { jobId: string; leaseGeneration: number }): void;
  /** A user asked for the pre-dispatched lease (jobId, generation) back. */
  onWithdraw?(lease: { jobId: string; leaseGeneration: number }): void;
}

export interface ChangeListener {
  stop(): Promise<void>;
}

export function listenForChanges(
  connectionString: string,
  handlers: ChangeHandlers,
  hooks: { onReconnected?: () => void } = {},
): ChangeListener {
  let client: Client | undefined;
  let stopped = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let failures = 0;

  const onNotification = (message: { channel: string; payload?: string | undefined }): void => {
    // Abort and withdraw name a lease as `<job id>:<generation>`.
    const onLease = message.channel === ABORT_CHANNEL ? handlers.onAbort : message.channel === WITHDRAW_CHANNEL ? handlers.onWithdraw : undefined;
    if (message.channel !== DUE_CHANNEL) {
      const lease = parseLeasePayload(message.payload);
      if (lease !== undefined) onLease?.(lease);
      return;
    }
    handlers.onDue();
  };

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
    next.on('notification', onNotification);
    try {
      await next.connect();
      await next.query(`LISTEN ${DUE_CHANNEL}; LISTEN ${ABORT_CHANNEL}; LISTEN ${WITHDRAW_CHANNEL}`);
      if (stopped) {
        await next.end();
        return;
      }
      client = next;
      if (failures > 0) hooks.onReconnected?.();
      failures = 0;
      handlers.onDue();
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

function parseLeasePayload(payload: string | undefined): { jobId: string; leaseGeneration: number } | undefined {
  const match = /^([0-9a-f-]{36}):(\d+)$/i.exec(payload ?? '');
  return match ? { jobId: match[1]!, leaseGeneration: Number(match[2]) } : undefined;
}
