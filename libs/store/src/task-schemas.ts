/**
 * Payload schemas of SDK tasks (migration 0010): an agent advertises the JSON
 * Schema each of its handlers declared, in its Hello; any coordinator reads
 * them back to check a new job's payload. Keyed by namespace, task and the
 * schema's hash, so a rollout that changes a schema keeps both versions until
 * the old one is no longer advertised.
 */
import { createHash } from 'node:crypto';
import { and, desc, eq, lt, sql } from 'drizzle-orm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { storeCall } from './pg-errors';
import { taskSchemas } from './schema';

export interface TaskSchemaRecord {
  namespace: string;
  task: string;
  schemaHash: string;
  /** The JSON Schema, parsed. */
  jsonSchema: unknown;
  agentId: string;
  advertisedAt: Date;
}

export interface AdvertisedSchema {
  task: string;
  /** JSON text of the schema, as the agent sent it. */
  jsonSchema: string;
}

export interface TaskSchemaQueries {
  /** Records (or refreshes) the schemas an agent advertised; one statement. */
  advertise(namespace: string, agentId: string, schemas: readonly AdvertisedSchema[]): Promise<void>;
  /** The schemas known for a task in a namespace, most recently advertised first. */
  forTask(namespace: string, task: string): Promise<TaskSchemaRecord[]>;
  /** Deletes schemas not advertised for `olderThanMs` (database clock); returns how many. */
  forget(olderThanMs: number): Promise<number>;
}

/** The hash a schema is stored under: SHA-256 of its JSON text with object keys sorted. */
export function schemaHash(jsonSchema: unknown): string {
  return createHash('sha256').update(canonical(jsonSchema)).digest('hex');
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical((value as Record<string, unknown>)[key])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function taskSchemaQueries(db: NodePgDatabase): TaskSchemaQueries {
  return {
    advertise: (namespace, agentId, schemas) =>
      storeCall('taskSchemas.advertise', async () => {
        if (schemas.length === 0) return;
        const rows = schemas.map((schema) => {
          const parsed = JSON.parse(schema.jsonSchema) as unknown;
          return { namespace, task: schema.task, schemaHash: schemaHash(parsed), jsonSchema: parsed, agentId };
        });
        await db
          .insert(taskSchemas)
          .values(rows)
          .onConflictDoUpdate({
            target: [taskSchemas.namespace, taskSchemas.task, taskSchemas.schemaHash],
            set: { advertisedAt: sql`now()`, agentId: sql`excluded.agent_id` },
          });
      }),
    forTask: (namespace, task) =>
      storeCall('taskSchemas.forTask', async () =>
        db
          .select()
          .from(taskSchemas)
          .where(and(eq(taskSchemas.namespace, namespace), eq(taskSchemas.task, task)))
          .orderBy(desc(taskSchemas.advertisedAt)),
      ),
    forget: (olderThanMs) =>
      storeCall('taskSchemas.forget', async () => {
        const deleted = await db
          .delete(taskSchemas)
          .where(lt(taskSchemas.advertisedAt, sql`now() - ${olderThanMs} * interval '1 millisecond'`))
          .returning({ task: taskSchemas.task });
        return deleted.length;
      }),
  };
}
