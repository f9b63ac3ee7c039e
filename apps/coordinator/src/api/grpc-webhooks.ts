/**
 * kairos.v1.WebhookService over gRPC: the same webhook commands as REST
 * `/webhooks` (webhook-commands.ts), for admin tokens of the caller's namespace.
 */
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Logger } from 'pino';
import type { GrpcServiceImplementation, ServiceMethods, WebhookService } from '@kairos/proto';
import type { Authenticator } from './auth';
import { unaryHandlers } from './grpc-unary';
import type { WebhookCommands } from './webhook-commands';
import type { DeliveryView, WebhookView } from './views';

type Impl = GrpcServiceImplementation<ServiceMethods<typeof WebhookService>>;

export function webhookServiceImplementation(deps: { webhooks: WebhookCommands; auth: Authenticator; logger: Logger }): Impl {
  const unary = unaryHandlers(deps.auth, deps.logger);
  return {
    createWebhook: unary('admin', async (req, namespace) => {
      const body: Record<string, unknown> = { url: req.url };
      if (req.events.length > 0) body.events = req.events;
      if (req.jobId) body.jobId = req.jobId;
      if (req.description) body.description = req.description;
      const created = await deps.webhooks.create(namespace, body);
      return { webhook: toWebhookMessage(created.webhook), secret: created.secret };
    }),
    listWebhooks: unary('admin', async (_req, namespace) => ({ webhooks: (await deps.webhooks.list(namespace)).map(toWebhookMessage) })),
    deleteWebhook: unary('admin', async (req, namespace) => {
      await deps.webhooks.remove(namespace, req.webhookId);
      return {};
    }),
    listWebhookDeliveries: unary('admin', async (req, namespace) => {
      const page = await deps.webhooks.deliveries(namespace, req.webhookId, {
        ...(req.limit ? { limit: req.limit } : {}),
        ...(req.cursor ? { cursor: req.cursor } : {}),
      });
      return { deliveries: page.deliveries.map(toDeliveryMessage), nextCursor: page.nextCursor ?? '' };
    }),
  } satisfies Impl;
}

function toWebhookMessage(webhook: WebhookView) {
  return {
    id: webhook.id,
    namespace: webhook.namespace,
    url: webhook.url,
    events: webhook.events,
    jobId: webhook.jobId ?? '',
    description: webhook.description ?? '',
    createdAt: timestampFromDate(new Date(webhook.createdAt)),
  };
}

function toDeliveryMessage(delivery: DeliveryView) {
  const at = (value: string | null) => (value === null ? undefined : timestampFromDate(new Date(value)));
  return {
    id: delivery.id,
    webhookId: delivery.webhookId,
    event: delivery.event,
    jobId: delivery.jobId,
    runId: delivery.runId ?? '',
    state: delivery.state,
    attempts: delivery.attempts,
    nextAttemptAt: at(delivery.nextAttemptAt),
    lastStatus: delivery.lastStatus ?? 0,
    lastError: delivery.lastError ?? '',
    createdAt: at(delivery.createdAt),
    deliveredAt: at(delivery.deliveredAt),
    bodyJson: JSON.stringify(delivery.body),
  };
}
