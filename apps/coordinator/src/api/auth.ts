/**
 * Who is calling, and may they? Both transports hand the `authorization`
 * header (REST) or metadata entry (gRPC) to `authenticate`, and check the
 * principal it returns against the permission their call needs with
 * `authorize`. One code path in development and production: `kairos dev` runs
 * with tokens too; only `--insecure` admits calls without one.
 *
 * Tokens are looked up by the SHA-256 of their secret (libs/store tokens.ts).
 * Answers are cached for `cacheMs` (a few seconds) per secret, so a revoked
 * or expired token stops working on every coordinator within that time, and
 * the database sees at most one look-up per token per `cacheMs`, whatever the
 * request rate. A token that expires sooner than the cache time is cached only
 * until it expires.
 */
import type { LiveToken, TokenRole } from '@kairos/store';
import { ApiError } from './errors';

/** What a call needs. Roles grant sets of these (ROLE_PERMISSIONS). */
export type Permission = 'read' | 'write' | 'admin' | 'agent';

export const ROLE_PERMISSIONS: Record<TokenRole, readonly Permission[]> = {
  reader: ['read'],
  writer: ['read', 'write'],
  admin: ['read', 'write', 'admin'],
  // An agent token opens AgentService streams and nothing else: a stolen agent
  // token cannot list, create or cancel jobs.
  agent: ['agent'],
};

export interface Principal {
  /** The token's id; null for the anonymous caller of an --insecure coordinator. */
  tokenId: string | null;
  /** Every job the caller sees or makes is in this namespace. */
  namespace: string;
  role: TokenRole | 'anonymous';
  permissions: ReadonlySet<Permission>;
  /** Who the caller is, in words, for records such as a run's `abortedBy`: the token's name and id. */
  actor: string;
  /** The token's name, if it was given one; null otherwise (and for the anonymous caller). */
  tokenName: string | null;
}

/** The caller of an --insecure coordinator who sent no token: everything, in namespace `default`. */
export const ANONYMOUS: Principal = {
  tokenId: null,
  namespace: 'default',
  role: 'anonymous',
  permissions: new Set<Permission>(['read', 'write', 'admin', 'agent']),
  actor: 'anonymous (insecure coordinator)',
  tokenName: null,
};

export interface Authenticator {
  /** The caller behind an `authorization` value; ApiError `unauthenticated` if there is none or it is not valid. */
  authenticate(authorization: string | undefined): Promise<Principal>;
}

export interface AuthenticatorOptions {
  /** Looks a secret up (store.tokens.authenticate). */
  lookup: (secret: string) => Promise<LiveToken | null>;
  /** Without a token: ANONYMOUS (true) or 401 (false). A token, when sent, is always checked. */
  insecure: boolean;
  /** Longest time an answer is reused; bounds how late a revocation takes effect. */
  cacheMs: number;
  /** Most secrets remembered (oldest forgotten first). */
  cacheEntries?: number;
  /** Called on every refusal (metrics). */
  onRefused?: () => void;
  /** Monotonic milliseconds (performance.now); injectable for tests. */
  nowMs?: () => number;
}

interface CacheEntry {
  principal: Principal | null;
  untilMs: number;
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const nowMs = options.nowMs ?? (() => performance.now());
  const maxEntries = options.cacheEntries ?? 10_000;
  const cache = new Map<string, CacheEntry>();
  const inFlight = new Map<string, Promise<Principal | null>>();

  async function resolve(secret: string): Promise<Principal | null> {
    const cached = cache.get(secret);
    if (cached && cached.untilMs > nowMs()) return cached.principal;
    const pending = inFlight.get(secret);
    if (pending) return pending;
    const lookup = options
      .lookup(secret)
      .then((live) => {
        const principal = live === null ? null : principalOf(live);
        const ttlMs = live?.expiresInMs == null ? options.cacheMs : Math.min(options.cacheMs, live.expiresInMs);
        cache.delete(secret);
        cache.set(secret, { principal, untilMs: nowMs() + ttlMs });
        while (cache.size > maxEntries) cache.delete(cache.keys().next().value!);
        return principal;
      })
      .finally(() => inFlight.delete(secret));
    inFlight.set(secret, lookup);
    return lookup;
  }

  const refuse = (message: string): never => {
    options.onRefused?.();
    throw new ApiError('unauthenticated', message);
  };

  return {
    async authenticate(authorization) {
      if (authorization === undefined || authorization === '') {
        if (options.insecure) return ANONYMOUS;
        return refuse('a bearer token is required: send "authorization: Bearer <token>"');
      }
      const match = BEARER.exec(authorization);
      if (!match) return refuse('the authorization header must be "Bearer <token>"');
      const principal = await resolve(match[1]!);
      return principal ?? refuse('the token is not valid (unknown, expired or revoked)');
    },
  };
}

function principalOf(live: LiveToken): Principal {
  return {
    tokenId: live.token.id,
    namespace: live.token.namespace,
    role: live.token.role,
    permissions: new Set(ROLE_PERMISSIONS[live.token.role]),
    actor: live.token.name ? `${live.token.name} (token ${live.token.id})` : `token ${live.token.id}`,
    tokenName: live.token.name,
  };
}

/** Throws `permission_denied` unless the principal holds `permission`. */
export function authorize(principal: Principal, permission: Permission): void {
  if (principal.permissions.has(permission)) return;
  const needs: Record<Permission, string> = {
    read: 'a reader, writer or admin token',
    write: 'a writer or admin token',
    admin: 'an admin token',
    agent: 'an agent token',
  };
  throw new ApiError('permission_denied', `this call needs ${needs[permission]}; the token's role is ${principal.role}`);
}
