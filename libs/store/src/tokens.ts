/**
 * Bearer tokens (migration 0004): created with a random secret that is shown
 * once and stored only as its SHA-256, looked up by that hash on every
 * authenticated call (the coordinator caches answers for a few seconds).
 *
 * SHA-256 rather than a slow password hash: the secret is 256 random bits,
 * not something a person chose, so there is no dictionary to slow down, and
 * the look-up must stay cheap enough for every request.
 *
 * Expiry and revocation are judged by the database clock, like leases.
 */
import { createHash, randomBytes } from 'node:crypto';
import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { isJobId } from './lease';
import { storeCall } from './pg-errors';
import { tokens } from './schema';

export type TokenRole = 'reader' | 'writer' | 'admin' | 'agent';
export const TOKEN_ROLES: readonly TokenRole[] = ['reader', 'writer', 'admin', 'agent'];

/** Every token secret starts with this, so secret scanners and people can recognise one. */
export const TOKEN_PREFIX = 'kairos_';

export interface TokenRecord {
  id: string;
  namespace: string;
  role: TokenRole;
  name: string | null;
  createdAt: Date;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

export interface NewToken {
  namespace: string;
  role: TokenRole;
  name?: string | null;
  /** Lifetime from creation (database clock); unset: never expires. */
  expiresInMs?: number | null;
}

export type RevokeResult = { kind: 'revoked' } | { kind: 'already-revoked' } | { kind: 'not-found' };

export interface LiveToken {
  token: TokenRecord;
  /** Milliseconds until it expires by the database clock; null: never. */
  expiresInMs: number | null;
}

export interface TokenQueries {
  /** Creates a token; `secret` is returned here and nowhere else, ever. */
  create(input: NewToken): Promise<{ token: TokenRecord; secret: string }>;
  /** Tokens in creation order (revoked and expired ones included), optionally of one namespace. */
  list(filter?: { namespace?: string }): Promise<TokenRecord[]>;
  /** Revokes a token; with `namespace`, only a token of that namespace (others are not found). */
  revoke(id: string, scope?: { namespace?: string }): Promise<RevokeResult>;
  /** The token whose secret this is, if it is neither revoked nor expired. */
  authenticate(secret: string): Promise<LiveToken | null>;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function newSecret(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

const COLUMNS = {
  id: tokens.id,
  namespace: tokens.namespace,
  role: tokens.role,
  name: tokens.name,
  createdAt: tokens.createdAt,
  expiresAt: tokens.expiresAt,
  revokedAt: tokens.revokedAt,
};

export function tokenQueries(db: NodePgDatabase): TokenQueries {
  return {
    async create(input) {
      const secret = newSecret();
      return storeCall('tokens.create', async () => {
        const [row] = await db
          .insert(tokens)
          .values({
            namespace: input.namespace,
            role: input.role,
            name: input.name ?? null,
            secretHash: hashSecret(secret),
            ...(input.expiresInMs
              ? { expiresAt: sql`now() + make_interval(secs => ${input.expiresInMs}::double precision / 1000)` }
              : {}),
          })
          .returning(COLUMNS);
        return { token: row as TokenRecord, secret };
      });
    },
    async list(filter = {}) {
      return storeCall('tokens.list', async () => {
        const rows = await db
          .select(COLUMNS)
          .from(tokens)
          .where(filter.namespace === undefined ? undefined : eq(tokens.namespace, filter.namespace))
          .orderBy(asc(tokens.createdAt), asc(tokens.id));
        return rows as TokenRecord[];
      });
    },
    async revoke(id, scope = {}) {
      if (!isJobId(id)) return { kind: 'not-found' };
      const inScope = scope.namespace === undefined ? eq(tokens.id, id) : and(eq(tokens.id, id), eq(tokens.namespace, scope.namespace));
      return storeCall('tokens.revoke', async () => {
        const updated = await db
          .update(tokens)
          .set({ revokedAt: sql`now()` })
          .where(and(inScope, isNull(tokens.revokedAt)))
          .returning({ id: tokens.id });
        if (updated.length === 1) return { kind: 'revoked' };
        const found = await db.select({ id: tokens.id }).from(tokens).where(inScope);
        return found.length === 1 ? { kind: 'already-revoked' } : { kind: 'not-found' };
      });
    },
    async authenticate(secret) {
      if (!secret.startsWith(TOKEN_PREFIX) || secret.length > 200) return null;
      return storeCall('tokens.authenticate', async () => {
        const rows = await db
          .select({
            ...COLUMNS,
            expiresInMs: sql<string | null>`floor(extract(epoch FROM (${tokens.expiresAt} - now())) * 1000)::bigint`,
          })
          .from(tokens)
          .where(
            and(
              eq(tokens.secretHash, hashSecret(secret)),
              isNull(tokens.revokedAt),
              sql`(${tokens.expiresAt} IS NULL OR ${tokens.expiresAt} > now())`,
            ),
          );
        const row = rows[0];
        if (row === undefined) return null;
        const { expiresInMs, ...token } = row;
        return { token: token as TokenRecord, expiresInMs: expiresInMs === null ? null : Number(expiresInMs) };
      });
    },
  };
}
