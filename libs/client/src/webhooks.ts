/** Webhooks as this client's callers see them (WebhookService; admin tokens only). */
import type { Webhook as WireWebhook, WebhookDelivery as WireDelivery } from '@kairos/proto';
import { dateOrNull, textOrNull } from './wire-values';

export type WebhookEvent = 'job.dead' | 'occurrence.failed' | 'occurrence.missed';
export const WEBHOOK_EVENTS: readonly WebhookEvent[] = ['job.dead', 'occurrence.failed', 'occurrence.missed'];

export interface Webhook {
  id: string;
  namespace: string;
  url: string;
  events: WebhookEvent[];
  /** Only this job's events; null: every job of the namespace. */
  jobId: string | null;
  description: string | null;
  createdAt: Date | null;
}

export interface CreateWebhookInput {
  /** Absolute http or https URL. */
  url: string;
  /** Default: all three. */
  events?: WebhookEvent[];
  /** Only this job's events. */
  jobId?: string;
  description?: string;
}

export interface CreatedWebhook {
  webhook: Webhook;
  /** The HMAC-SHA256 signing key; shown once. */
  secret: string;
}

export interface WebhookDelivery {
  /** The same on every attempt: deduplicate on it. */
  id: string;
  webhookId: string;
  event: WebhookEvent;
  jobId: string;
  runId: string | null;
  state: 'pending' | 'delivered' | 'failed';
  attempts: number;
  nextAttemptAt: Date | null;
  /** null: the last attempt got no answer. */
  lastStatus: number | null;
  lastError: string | null;
  createdAt: Date | null;
  deliveredAt: Date | null;
  /** The body as sent. */
  body: Record<string, unknown>;
}

export interface WebhookDeliveryPage {
  deliveries: WebhookDelivery[];
  /** Pass as `cursor` for the next (older) page; null on the last. */
  nextCursor: string | null;
}

export function webhookFromWire(webhook: WireWebhook): Webhook {
  return {
    id: webhook.id,
    namespace: webhook.namespace,
    url: webhook.url,
    events: webhook.events as WebhookEvent[],
    jobId: textOrNull(webhook.jobId),
    description: textOrNull(webhook.description),
    createdAt: dateOrNull(webhook.createdAt),
  };
}

export function deliveryFromWire(delivery: WireDelivery): WebhookDelivery {
  return {
    id: delivery.id,
    webhookId: delivery.webhookId,
    event: delivery.event as WebhookEvent,
    jobId: delivery.jobId,
    runId: textOrNull(delivery.runId),
    state: delivery.state as WebhookDelivery['state'],
    attempts: delivery.attempts,
    nextAttemptAt: dateOrNull(delivery.nextAttemptAt),
    lastStatus: delivery.lastStatus === 0 ? null : delivery.lastStatus,
    lastError: textOrNull(delivery.lastError),
    createdAt: dateOrNull(delivery.createdAt),
    deliveredAt: dateOrNull(delivery.deliveredAt),
    body: delivery.bodyJson === '' ? {} : (JSON.parse(delivery.bodyJson) as Record<string, unknown>),
  };
}
