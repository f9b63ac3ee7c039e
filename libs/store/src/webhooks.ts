/**
 * Webhooks (migration 0014): endpoints that are told, per namespace (or per
 * job), when a job goes DEAD, an occurrence fails for good, or an
 * occurrence is missed. Triggers queue a delivery in the transaction that
 * records the event (the outbox: a crash cannot lose one); coordinators
 * claim due deliveries with a short lock (FOR UPDATE SKIP LOCKED, so several
 * share the work and none sends the same one at once), send them, and record
 * the answer: delivered, or retried later, or failed after the last attempt.
 * A coordinator that dies while sending leaves the lock to lapse, and the
 * delivery is sent again: at least once.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Pool } from 'pg';
import { isJobId } from './lease';
import { storeCall } from './pg-errors';

export const WEBHOOK_EVENTS = ['job.dead', 'occurrence.failed', 'occurrence.missed'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Every signing secret starts with this, so secret scanners and people can recognise one. */
export const WEBHOOK_SECRET_PREFIX = 'kairos_whsec_';

export interface WebhookRecord {
  id: string;
  namespace: string;
  url: string;
  events: WebhookEvent[];
  /** Only this job's events; null: every job of the namespace. */
  jobId: string | null;
  description: string | null;
  createdAt: Date;
}

export type DeliveryState = 'pending' | 'delivered' | 'failed';

export interface DeliveryRecord {
  id: number;
  webhookId: string;
  event: WebhookEvent;
  jobId: string;
  runId: number | null;
  state: DeliveryState;
  attempts: number;
  nextAttemptAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
  createdAt: Date;
  deliveredAt: Date | null;
  body: Record<string, unknown>;
}

/** A delivery claimed for sending, with what sending needs. */
export interface DueDelivery {
  id: number;
  webhookId: string;
  event: WebhookEvent;
  url: string;
  secret: string;
  /** The event as JSON text, the same on every attempt. */
  bodyJson: string;
  /** Attempts made before this one. */
  attempts: number;
}

export interface WebhookQueries {
  /** Creates a webhook; `secret` (its signing key) is returned here and by no other call. */
  create(input: { namespace: string; url: string; events: readonly WebhookEvent[]; jobId?: string | null; description?: string | null }): Promise<{
    webhook: WebhookRecord;
    secret: string;
  }>;
  list(namespace: string): Promise<WebhookRecord[]>;
  get(namespace: string, id: string): Promise<WebhookRecord | null>;
  /** Deletes it with its deliveries; false when the namespace has no such webhook. */
  remove(namespace: string, id: string): Promise<boolean>;
  /** Its deliveries, newest first, `limit` at most, before delivery id `before` when given. */
  deliveries(namespace: string, webhookId: string, page: { limit: number; before?: number | null }): Promise<DeliveryRecord[]>;
  /** Up to `limit` pending deliveries that are due, locked for `lockMs` (database clock) for this sender. */
  claimDue(limit: number, lockMs: number): Promise<DueDelivery[]>;
  /** A 2xx answer: done. */
  delivered(id: number, status: number): Promise<void>;
  /** Not delivered: retry in `retryInMs`, or give up (null). */
  notDelivered(id: number, result: { status: number | null; error: string; retryInMs: number | null }): Promise<void>;
}

interface WebhookRow {
  id: string;
  namespace: string;
  url: string;
  events: WebhookEvent[];
  job_id: string | null;
  description: string | null;
  created_at: Date;
}

const WEBHOOK_COLUMNS = 'id, namespace, url, events, job_id, description, created_at';

function webhookOf(row: WebhookRow): WebhookRecord {
  return {
    id: row.id,
    namespace: row.namespace,
    url: row.url,
    events: row.events,
    jobId: row.job_id,
    description: row.description,
    createdAt: row.created_at,
  };
}

export function webhookQueries(pool: Pool): WebhookQueries {
  return {
    create: ({ namespace, url, events, jobId, description }) =>
      storeCall('webhooks.create', async () => {
        const secret = `${WEBHOOK_SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
        const { rows } = await pool.query<WebhookRow>(
          `INSERT INTO webhooks (id, namespace, url, secret, events, job_id, description)
           VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${WEBHOOK_COLUMNS}`,
          [randomUUID(), namespace, url, secret, [...events], jobId ?? null, description ?? null],
        );
        return { webhook: webhookOf(rows[0]!), secret };
      }),
    list: (namespace) =>
      storeCall('webhooks.list', async () => {
        const { rows } = await pool.query<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE namespace = $1 ORDER BY created_at, id`, [namespace]);
        return rows.map(webhookOf);
      }),
    get: (namespace, id) =>
      storeCall('webhooks.get', async () => {
        if (!isJobId(id)) return null;
        const { rows } = await pool.query<WebhookRow>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks WHERE namespace = $1 AND id = $2`, [namespace, id]);
        return rows[0] ? webhookOf(rows[0]) : null;
      }),
    remove: (namespace, id) =>
      storeCall('webhooks.remove', async () => {
        if (!isJobId(id)) return false;
        const { rowCount } = await pool.query('DELETE FROM webhooks WHERE namespace = $1 AND id = $2', [namespace, id]);
        return (rowCount ?? 0) > 0;
      }),
    deliveries: (namespace, webhookId, { limit, before }) =>
      storeCall('webhooks.deliveries', async () => {
        const { rows } = await pool.query<{
          id: string;
          webhook_id: string;
          event: WebhookEvent;
          job_id: string;
          run_id: string | null;
          state: DeliveryState;
          attempts: number;
          next_attempt_at: Date;
          last_status: number | null;
          last_error: string | null;
          created_at: Date;
          delivered_at: Date | null;
          body: Record<string, unknown>;
        }>(
          `SELECT id, webhook_id, event, job_id, run_id, state, attempts, next_attempt_at, last_status, last_error, created_at, delivered_at, body
           FROM webhook_deliveries
           WHERE namespace = $1 AND webhook_id = $2 AND ($3::bigint IS NULL OR id < $3)
           ORDER BY id DESC LIMIT $4`,
          [namespace, webhookId, before ?? null, limit],
        );
        return rows.map((row) => ({
          id: Number(row.id),
          webhookId: row.webhook_id,
          event: row.event,
          jobId: row.job_id,
          runId: row.run_id === null ? null : Number(row.run_id),
          state: row.state,
          attempts: row.attempts,
          nextAttemptAt: row.state === 'pending' ? row.next_attempt_at : null,
          lastStatus: row.last_status,
          lastError: row.last_error,
          createdAt: row.created_at,
          deliveredAt: row.delivered_at,
          body: row.body,
        }));
      }),
    claimDue: (limit, lockMs) =>
      storeCall('webhooks.claimDue', async () => {
        const { rows } = await pool.query<{ id: string; webhook_id: string; event: WebhookEvent; url: string; secret: string; body: string; attempts: number }>(
          `WITH due AS (
             SELECT id FROM webhook_deliveries
             WHERE state = 'pending' AND next_attempt_at <= now() AND (locked_until IS NULL OR locked_until < now())
             ORDER BY next_attempt_at LIMIT $1
             FOR UPDATE SKIP LOCKED
           )
           UPDATE webhook_deliveries d SET locked_until = now() + make_interval(secs => $2::double precision / 1000)
           FROM due, webhooks w
           WHERE d.id = due.id AND w.id = d.webhook_id
           RETURNING d.id, d.webhook_id, d.event, w.url, w.secret, d.body::text AS body, d.attempts`,
          [limit, lockMs],
        );
        return rows.map((row) => ({
          id: Number(row.id),
          webhookId: row.webhook_id,
          event: row.event,
          url: row.url,
          secret: row.secret,
          bodyJson: row.body,
          attempts: row.attempts,
        }));
      }),
    delivered: (id, status) =>
      storeCall('webhooks.delivered', async () => {
        await pool.query(
          `UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1, last_status = $2, last_error = NULL,
             delivered_at = now(), locked_until = NULL WHERE id = $1`,
          [id, status],
        );
      }),
    notDelivered: (id, { status, error, retryInMs }) =>
      storeCall('webhooks.notDelivered', async () => {
        await pool.query(
          `UPDATE webhook_deliveries SET attempts = attempts + 1, last_status = $2, last_error = $3, locked_until = NULL,
             state = CASE WHEN $4::double precision IS NULL THEN 'failed' ELSE 'pending' END,
             next_attempt_at = CASE WHEN $4::double precision IS NULL THEN next_attempt_at
                                    ELSE now() + make_interval(secs => $4::double precision / 1000) END
           WHERE id = $1`,
          [id, status, error.slice(0, 2_000), retryInMs],
        );
      }),
  };
}
