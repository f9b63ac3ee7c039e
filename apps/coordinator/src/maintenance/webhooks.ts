/**
 * The webhook sender: every coordinator runs one. Each pass claims the due
 * deliveries (libs/store webhooks.ts: locked for the request timeout plus a
 * margin, so a coordinator that dies mid-send leaves them to another), sends
 * them a few at a time, and records each answer. A 2xx is delivered; anything
 * else (an error status, a timeout, a refused connection) is retried with
 * exponential backoff and jitter until the last attempt, then the delivery is
 * `failed` (and stays visible). Delivery is at least once: receivers
 * deduplicate on the delivery id.
 *
 * Each request is signed: `Kairos-Signature: t=<unix seconds>,v1=<hex>` where
 * the hex is HMAC-SHA256, keyed with the webhook's secret, of
 * `<t>.<the raw body>`. A receiver recomputes it, compares in constant time,
 * and refuses a timestamp far from its clock (replays).
 */
import { createHmac } from 'node:crypto';
import type { Logger } from 'pino';
import type { DueDelivery, Store } from '@kairos/store';
import { periodic, type Periodic } from './periodic';

export interface WebhookSenderOptions {
  /** How often due deliveries are looked for (jittered). */
  pollMs: number;
  /** A request's deadline. */
  timeoutMs: number;
  /** Attempts before a delivery is `failed`. */
  maxAttempts: number;
  /** Backoff: base × 2^(attempt−1), capped, ±20 % jitter. */
  retryBaseMs: number;
  retryCapMs: number;
  /** Requests in flight at once per coordinator. */
  concurrency: number;
  userAgent: string;
}

export interface WebhookSender {
  start(): void;
  stop(): Promise<void>;
}

/** `t=<seconds>,v1=<hex>` for this body at this time. */
export function signature(secret: string, timestampSeconds: number, body: string): string {
  return `t=${timestampSeconds},v1=${createHmac('sha256', secret).update(`${timestampSeconds}.${body}`).digest('hex')}`;
}

/** The delay before retry number `attempt` (1 = after the first failure). */
export function retryDelayMs(attempt: number, options: Pick<WebhookSenderOptions, 'retryBaseMs' | 'retryCapMs'>, random: () => number = Math.random): number {
  const step = Math.min(options.retryCapMs, options.retryBaseMs * 2 ** Math.min(attempt - 1, 30));
  return Math.round(step * (0.8 + random() * 0.4));
}

export function createWebhookSender(deps: {
  store: Store;
  options: WebhookSenderOptions;
  logger: Logger;
  onResult: (result: 'delivered' | 'retry' | 'failed') => void;
}): WebhookSender {
  const { store, options, logger } = deps;
  const loop: Periodic = periodic(options.pollMs, pass, logger, 'webhook delivery');

  async function pass(): Promise<void> {
    // Keep going while full batches come back: a backlog drains without waiting a poll per batch.
    for (;;) {
      if (loop.stopped) return;
      const due = await store.webhooks.claimDue(options.concurrency, options.timeoutMs + 5_000);
      if (due.length === 0) return;
      await Promise.all(due.map(send));
      if (due.length < options.concurrency) return;
    }
  }

  async function send(delivery: DueDelivery): Promise<void> {
    const attempt = delivery.attempts + 1;
    const body = JSON.stringify({ deliveryId: String(delivery.id), ...(JSON.parse(delivery.bodyJson) as Record<string, unknown>) });
    const timestamp = Math.floor(Date.now() / 1000);
    let status: number | null = null;
    let error: string;
    try {
      const response = await fetch(delivery.url, {
        method: 'POST',
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(options.timeoutMs),
        headers: {
          'content-type': 'application/json',
          'user-agent': options.userAgent,
          'kairos-event': delivery.event,
          'kairos-delivery': String(delivery.id),
          'kairos-webhook': delivery.webhookId,
          'kairos-attempt': String(attempt),
          'kairos-timestamp': String(timestamp),
          'kairos-signature': signature(delivery.secret, timestamp, body),
        },
      });
      status = response.status;
      // Never read more than a little of what a receiver sends back.
      await response.body?.cancel().catch(() => undefined);
      if (status >= 200 && status < 300) {
        await store.webhooks.delivered(delivery.id, status);
        deps.onResult('delivered');
        return;
      }
      error = `answered ${status}`;
    } catch (cause: unknown) {
      error = cause instanceof Error && cause.name === 'TimeoutError' ? `no answer within ${options.timeoutMs} ms` : `request failed: ${cause instanceof Error ? cause.message : String(cause)}`;
    }
    const giveUp = attempt >= options.maxAttempts;
    await store.webhooks.notDelivered(delivery.id, { status, error, retryInMs: giveUp ? null : retryDelayMs(attempt, options) });
    deps.onResult(giveUp ? 'failed' : 'retry');
    logger[giveUp ? 'warn' : 'info'](
      { deliveryId: delivery.id, webhookId: delivery.webhookId, event: delivery.event, attempt, status, error },
      giveUp ? 'webhook delivery failed for good' : 'webhook delivery failed; will retry',
    );
  }

  return {
    start: () => loop.start(),
    stop: () => loop.stop(),
  };
}
