/**
 * Payload checks for SDK tasks. A handler may declare its payload's schema
 * (defineTask in @kairos/agent); its agent advertises it, as JSON Schema, in
 * its Hello; this module records it for the agent's namespace and checks the
 * payload of every new or edited job of that task against it, so a payload
 * the handler would refuse is a 400 at create, naming the field, not a run
 * that fails three times.
 *
 * - No schema known for a task (no agent advertised one): the payload is not
 *   checked beyond the general limits; the handler judges it when it runs.
 * - Several schemas known (a rollout changed it): a payload either accepts
 *   passes; the refusal names the problem with the newest one.
 * - A schema is data from a peer: it is refused (logged, counted, the agent
 *   still connects) when larger than 64 KiB, not a JSON object, not valid
 *   JSON Schema, or when one of its regular expressions could take
 *   exponential time (safe-regex2), so no agent can stall the coordinator's
 *   event loop for everyone's requests.
 * - Known schemas are cached for `cacheMs` per namespace and task; a schema an
 *   agent advertises to another coordinator is seen here after at most that.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import safeRegex from 'safe-regex2';
import type { Logger } from 'pino';
import { schemaHash, type Store } from '@kairos/store';
import { BUILTIN_PAYLOADS } from '@kairos/tasks';
import { ValidationError } from './validation';

export const MAX_SCHEMA_BYTES = 64 * 1024;
/** Most schemas one Hello may advertise (one per task). */
const MAX_SCHEMAS = 100;

export interface OfferedSchema {
  task: string;
  jsonSchema: string;
}

export interface PayloadSchemas {
  /** Records the schemas an agent offered for its tasks; returns the tasks whose schema was refused, with why. */
  advertise(namespace: string, agentId: string, tasks: readonly string[], offered: readonly OfferedSchema[]): Promise<Array<{ task: string; reason: string }>>;
  /** Throws a ValidationError naming `payload.<field>` when the task's known schemas all refuse the payload. */
  check(namespace: string, task: string, payload: Record<string, unknown>): Promise<void>;
}

export function createPayloadSchemas(deps: { store: Store; logger: Logger; cacheMs?: number; now?: () => number }): PayloadSchemas {
  const cacheMs = deps.cacheMs ?? 5_000;
  const now = deps.now ?? (() => performance.now());
  /** Compiled validators by schema hash: a schema compiles once per coordinator. */
  const compiled = new Map<string, ValidateFunction>();
  /** Known schemas by namespace and task, with when they were read. */
  const known = new Map<string, { at: number; schemas: Array<{ hash: string; schema: unknown }> }>();
  const key = (namespace: string, task: string) => `${namespace}\u0000${task}`;

  function compile(hash: string, schema: unknown): ValidateFunction {
    let validate = compiled.get(hash);
    if (validate === undefined) {
      // An instance per schema: one agent's `$id` cannot collide with another namespace's.
      const ajv = new Ajv2020({ strict: false, allErrors: false });
      addFormats(ajv);
      validate = ajv.compile(schema as object);
      compiled.set(hash, validate);
    }
    return validate;
  }

  /** Why a schema must not be used; null when it may. */
  function refusal(text: string): { reason: string } | { schema: Record<string, unknown> } {
    if (Buffer.byteLength(text) > MAX_SCHEMA_BYTES) return { reason: `larger than ${MAX_SCHEMA_BYTES} bytes` };
    let schema: unknown;
    try {
      schema = JSON.parse(text);
    } catch {
      return { reason: 'not JSON' };
    }
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return { reason: 'not a JSON object' };
    const unsafe = unsafePattern(schema);
    if (unsafe !== null) return { reason: `the pattern ${JSON.stringify(unsafe)} could take exponential time` };
    try {
      compile(schemaHash(schema), schema);
    } catch (error: unknown) {
      return { reason: `not a valid JSON Schema: ${(error as Error).message}` };
    }
    return { schema: schema as Record<string, unknown> };
  }

  return {
    async advertise(namespace, agentId, tasks, offered) {
      const refused: Array<{ task: string; reason: string }> = [];
      const accepted: OfferedSchema[] = [];
      for (const offer of offered.slice(0, MAX_SCHEMAS)) {
        if (!tasks.includes(offer.task)) refused.push({ task: offer.task, reason: 'not one of the tasks the agent runs' });
        else if (offer.task in BUILTIN_PAYLOADS) refused.push({ task: offer.task, reason: 'a built-in task: its payload contract is fixed' });
        else {
          const judged = refusal(offer.jsonSchema);
          if ('reason' in judged) refused.push({ task: offer.task, reason: judged.reason });
          else accepted.push({ task: offer.task, jsonSchema: JSON.stringify(judged.schema) });
        }
      }
      if (offered.length > MAX_SCHEMAS) refused.push({ task: '*', reason: `more than ${MAX_SCHEMAS} schemas: the rest were ignored` });
      if (accepted.length > 0) {
        await deps.store.taskSchemas.advertise(namespace, agentId, accepted);
        for (const offer of accepted) known.delete(key(namespace, offer.task));
      }
      for (const { task, reason } of refused) deps.logger.warn({ agentId, namespace, task, reason }, 'payload schema refused');
      return refused;
    },

    async check(namespace, task, payload) {
      if (task in BUILTIN_PAYLOADS) return; // checked by parseCreateJob
      const cacheKey = key(namespace, task);
      let entry = known.get(cacheKey);
      if (entry === undefined || now() - entry.at > cacheMs) {
        const rows = await deps.store.taskSchemas.forTask(namespace, task);
        entry = { at: now(), schemas: rows.map((row) => ({ hash: row.schemaHash, schema: row.jsonSchema })) };
        known.set(cacheKey, entry);
      }
      if (entry.schemas.length === 0) return;
      let newestProblem: ValidationError | null = null;
      for (const { hash, schema } of entry.schemas) {
        let validate: ValidateFunction;
        try {
          validate = compile(hash, schema);
        } catch {
          continue; // stored by a coordinator of another version that accepted it; this one cannot use it
        }
        if (validate(payload)) return;
        newestProblem ??= problemOf(task, validate.errors ?? []);
      }
      if (newestProblem !== null) throw newestProblem;
    },
  };
}

/** The first ajv error as a ValidationError naming `payload.<path>`. */
function problemOf(task: string, errors: readonly ErrorObject[]): ValidationError {
  const error = errors[0];
  if (error === undefined) return new ValidationError('payload', `invalid payload for task "${task}"`);
  const parts = error.instancePath.split('/').slice(1).map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
  const params = error.params as { missingProperty?: string; additionalProperty?: string };
  if (error.keyword === 'required' && params.missingProperty) parts.push(params.missingProperty);
  if (error.keyword === 'additionalProperties' && params.additionalProperty) parts.push(params.additionalProperty);
  const field = ['payload', ...parts].join('.');
  const what =
    error.keyword === 'required' ? 'is required' : error.keyword === 'additionalProperties' ? 'is not allowed' : (error.message ?? 'is invalid');
  return new ValidationError(field, `invalid payload for task "${task}" (its handler's schema): ${field} ${what}`);
}

/** The first regular expression in a schema that could backtrack exponentially; null when there is none. */
export function unsafePattern(schema: unknown): string | null {
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      stack.push(...node);
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    for (const [name, value] of Object.entries(node)) {
      if (name === 'pattern' && typeof value === 'string' && !isSafe(value)) return value;
      if (name === 'patternProperties' && value !== null && typeof value === 'object') {
        const bad = Object.keys(value).find((pattern) => !isSafe(pattern));
        if (bad !== undefined) return bad;
      }
      stack.push(value);
    }
  }
  return null;
}

function isSafe(pattern: string): boolean {
  try {
    return safeRegex(new RegExp(pattern, 'u'));
  } catch {
    return false;
  }
}
