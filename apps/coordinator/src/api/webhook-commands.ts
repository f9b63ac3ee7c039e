/**
 * Webhook management over the API (admin role, like tokens: a webhook holds a
 * signing secret and makes the coordinators call out of the cluster): create,
 * list, delete, and read a webhook's deliveries. The same commands serve REST
 * and gRPC.
 */
import { z } from 'zod';
import { WEBHOOK_EVENTS, type DeliveryRecord, type Store, type WebhookEvent, type WebhookRecord } from '@kairos/store';
import { ApiError } from './errors';
import { parseBody, parseId, parseListDeliveries } from './validation';
import type { DeliveryView, WebhookView } from './views';

export interface WebhookCommands {
  /** The signing secret is in this answer and nowhere else. */
  create(namespace: string, body: unknown): Promise<{ webhook: WebhookView; secret: string }>;
  list(namespace: string): Promise<WebhookView[]>;
  remove(namespace: string, webhookId: string): Promise<void>;
  /** Newest first; query `limit` and `cursor` (the previous page's `nextCursor`), as REST takes them. */
  deliveries(namespace: string, webhookId: string, query: Record<string, unknown>): Promise<{ deliveries: DeliveryView[]; nextCursor: string | null }>;
}

export const createWebhookSchema = z.strictObject({
  url: z
    .string({ error: 'url must be a string' })
    .max(2_000, 'url must be at most 2000 characters')
    .refine((value) => {
      try {
        const url = new URL(value);
        return (url.protocol === 'https:' || url.protocol === 'http:') && url.hostname !== '';
      } catch {
        return false;
      }
    }, 'url must be an absolute http or https URL'),
  events: z
    .array(z.enum(WEBHOOK_EVENTS, { error: `events must be among ${WEBHOOK_EVENTS.join(', ')}` }), { error: 'events must be an array' })
    .min(1, 'events must name at least one event')
    .max(WEBHOOK_EVENTS.length, `events has ${WEBHOOK_EVENTS.length} possible values`)
    .refine((events) => new Set(events).size === events.length, 'events must not repeat an event')
    .optional(),
  jobId: z.string({ error: 'jobId must be a string' }).nullish(),
  description: z.string({ error: 'description must be a string' }).max(200, 'description must be at most 200 characters').nullish(),
});

export function webhookCommands(deps: {
  store: Store;
  /** Hosts webhooks may call (host or host:port); empty: any. */
  allowHosts: readonly string[];
}): WebhookCommands {
  const { store, allowHosts } = deps;
  return {
    async create(namespace, body) {
      const input = parseBody(createWebhookSchema, body, 4);
      const url = new URL(input.url);
      if (allowHosts.length > 0 && !allowHosts.includes(url.hostname) && !allowHosts.includes(url.host)) {
        throw new ApiError('permission_denied', `host "${url.host}" is not on this coordinator's webhook allow-list (KAIROS_WEBHOOK_ALLOW_HOSTS)`, 'url');
      }
      let jobId: string | null = null;
      if (input.jobId !== undefined && input.jobId !== null) {
        jobId = parseId(input.jobId);
        if (!(await store.jobs.get(namespace, jobId))) throw new ApiError('not_found', `job ${input.jobId} not found`, 'jobId', undefined, 'JOB_NOT_FOUND');
      }
      const { webhook, secret } = await store.webhooks.create({
        namespace,
        url: input.url,
        events: input.events ?? WEBHOOK_EVENTS,
        jobId,
        description: input.description ?? null,
      });
      return { webhook: webhookView(webhook), secret };
    },
    async list(namespace) {
      return (await store.webhooks.list(namespace)).map(webhookView);
    },
    async remove(namespace, webhookId) {
      if (!(await store.webhooks.remove(namespace, parseId(webhookId, 'webhookId')))) throw webhookNotFound(webhookId);
    },
    async deliveries(namespace, webhookId, query) {
      const id = parseId(webhookId, 'webhookId');
      if (!(await store.webhooks.get(namespace, id))) throw webhookNotFound(webhookId);
      const { limit, before } = parseListDeliveries(query);
      const rows = await store.webhooks.deliveries(namespace, id, { limit: limit + 1, before });
      const page = rows.slice(0, limit);
      return { deliveries: page.map(deliveryView), nextCursor: rows.length > limit ? String(page[page.length - 1]!.id) : null };
    },
  };
}

function webhookNotFound(webhookId: string): ApiError {
  return new ApiError('not_found', `webhook ${webhookId} not found`, undefined, undefined, 'WEBHOOK_NOT_FOUND');
}

export function webhookView(webhook: WebhookRecord): WebhookView {
  return {
    id: webhook.id,
    namespace: webhook.namespace,
    url: webhook.url,
    events: [...webhook.events] as WebhookEvent[],
    jobId: webhook.jobId,
    description: webhook.description,
    createdAt: webhook.createdAt.toISOString(),
  };
}

export function deliveryView(delivery: DeliveryRecord): DeliveryView {
  return {
    id: String(delivery.id),
    webhookId: delivery.webhookId,
    event: delivery.event,
    jobId: delivery.jobId,
    runId: delivery.runId === null ? null : String(delivery.runId),
    state: delivery.state,
    attempts: delivery.attempts,
    nextAttemptAt: delivery.nextAttemptAt?.toISOString() ?? null,
    lastStatus: delivery.lastStatus,
    lastError: delivery.lastError,
    createdAt: delivery.createdAt.toISOString(),
    deliveredAt: delivery.deliveredAt?.toISOString() ?? null,
    body: delivery.body,
  };
}
