/** Bearer tokens as this client's callers see them (TokenService; admin tokens only). */
import { TokenRole as WireRole, type Token as WireToken } from '@kairos/proto';
import { KairosError, KairosErrorCode } from './error';
import { dateOrNull, textOrNull } from './wire-values';

export type TokenRole = 'reader' | 'writer' | 'admin' | 'agent';
export const TOKEN_ROLES: readonly TokenRole[] = ['reader', 'writer', 'admin', 'agent'];

export interface Token {
  id: string;
  namespace: string;
  role: TokenRole;
  name: string | null;
  createdAt: Date | null;
  /** null: never expires. */
  expiresAt: Date | null;
  /** null: not revoked. */
  revokedAt: Date | null;
}

/** The caller's own token (Whoami); the JSON shape of REST `GET /whoami`. */
export interface Whoami {
  namespace: string;
  role: TokenRole | 'anonymous';
  tokenName: string | null;
  /** null for the anonymous caller of an insecure coordinator. */
  tokenId: string | null;
}

export interface CreateTokenInput {
  role: TokenRole;
  /** Must be the caller's own namespace if given (tokens are made there); another is `permission-denied`. */
  namespace?: string;
  name?: string;
  /** Lifetime in seconds; unset: never expires. */
  expiresInSeconds?: number;
}

export interface CreatedToken {
  token: Token;
  /** Shown once: the coordinator stores only its hash. */
  secret: string;
}

const TO_WIRE: Record<TokenRole, WireRole> = {
  reader: WireRole.READER,
  writer: WireRole.WRITER,
  admin: WireRole.ADMIN,
  agent: WireRole.AGENT,
};

export function createTokenRequest(input: CreateTokenInput): { role: WireRole; name: string; expiresInSeconds: number; namespace: string } {
  const role = TO_WIRE[input.role];
  if (role === undefined) {
    throw new KairosError(KairosErrorCode.InvalidArgument, `role must be one of ${TOKEN_ROLES.join(', ')}`, { field: 'role' });
  }
  const expires = input.expiresInSeconds ?? 0;
  if (!Number.isInteger(expires) || expires < 0 || expires > 0xffff_ffff) {
    throw new KairosError(KairosErrorCode.InvalidArgument, 'expiresInSeconds must be a whole number of seconds', {
      field: 'expiresInSeconds',
    });
  }
  return { role, name: input.name ?? '', expiresInSeconds: expires, namespace: input.namespace ?? '' };
}

export function tokenFromWire(token: WireToken): Token {
  const role = (Object.keys(TO_WIRE) as TokenRole[]).find((name) => TO_WIRE[name] === token.role);
  if (role === undefined) throw new KairosError(KairosErrorCode.Internal, `unknown token role ${token.role}`);
  return {
    id: token.id,
    namespace: token.namespace,
    role,
    name: textOrNull(token.name),
    createdAt: dateOrNull(token.createdAt),
    expiresAt: dateOrNull(token.expiresAt),
    revokedAt: dateOrNull(token.revokedAt),
  };
}
