/**
 * Token management over the API (admin role): create, list and revoke tokens
 * of the caller's own namespace. The CLI's `kairos tokens` does the same
 * straight against the database, for the first token.
 */
import { z } from 'zod';
import { TOKEN_ROLES, type Store, type TokenRecord, type TokenRole } from '@kairos/store';
import { ApiError } from './errors';
import type { TokenView } from './views';
import { parseBody, parseId } from './validation';

export type { TokenView } from './views';

export interface TokenCommands {
  /** The secret is in this answer and nowhere else. */
  create(namespace: string, body: unknown): Promise<{ token: TokenView; secret: string }>;
  list(namespace: string): Promise<TokenView[]>;
  revoke(namespace: string, tokenId: string): Promise<void>;
}

/** Longest lifetime `expiresInSeconds` may ask for: ten years. */
const MAX_LIFETIME_SECONDS = 10 * 366 * 24 * 3600;

export const createTokenSchema = z.strictObject({
  role: z.enum(TOKEN_ROLES as [TokenRole, ...TokenRole[]], { error: `role must be one of ${TOKEN_ROLES.join(', ')}` }),
  name: z.string({ error: 'name must be a string' }).max(200, 'name must be at most 200 characters').nullish(),
  expiresInSeconds: z
    .number({ error: 'expiresInSeconds must be a number' })
    .int('expiresInSeconds must be an integer')
    .positive('expiresInSeconds must be positive')
    .max(MAX_LIFETIME_SECONDS, `expiresInSeconds must be at most ${MAX_LIFETIME_SECONDS}`)
    .nullish(),
  namespace: z.string({ error: 'namespace must be a string' }).optional(),
});

export function tokenCommands(store: Store): TokenCommands {
  return {
    async create(namespace, body) {
      // NUL and lone surrogates are refused first: PostgreSQL text cannot hold them (a 500 before this check).
      const input = parseBody(createTokenSchema, body, 4);
      if (input.namespace !== undefined && input.namespace !== namespace) {
        throw new ApiError('permission_denied', `an admin token of namespace ${namespace} can make tokens only for ${namespace}`, 'namespace');
      }
      const { token, secret } = await store.tokens.create({
        namespace,
        role: input.role,
        name: input.name ?? null,
        expiresInMs: input.expiresInSeconds ? input.expiresInSeconds * 1000 : null,
      });
      return { token: tokenView(token), secret };
    },
    async list(namespace) {
      return (await store.tokens.list({ namespace })).map(tokenView);
    },
    async revoke(namespace, tokenId) {
      const result = await store.tokens.revoke(parseId(tokenId, 'tokenId'), { namespace });
      if (result.kind === 'not-found') throw new ApiError('not_found', `token ${tokenId} not found`, undefined, undefined, 'TOKEN_NOT_FOUND');
    },
  };
}

export function tokenView(token: TokenRecord): TokenView {
  return {
    id: token.id,
    namespace: token.namespace,
    role: token.role,
    name: token.name,
    createdAt: token.createdAt.toISOString(),
    expiresAt: token.expiresAt?.toISOString() ?? null,
    revokedAt: token.revokedAt?.toISOString() ?? null,
  };
}
