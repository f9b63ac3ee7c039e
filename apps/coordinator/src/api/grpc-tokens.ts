/**
 * kairos.v1.TokenService over gRPC: the same token commands as REST `/tokens`
 * (token-commands.ts), for admin tokens of the caller's namespace.
 */
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import type { Logger } from 'pino';
import { TokenRole, type GrpcServiceImplementation, type ServiceMethods, type TokenService } from '@kairos/proto';
import type { Authenticator } from './auth';
import { unaryHandlers } from './grpc-unary';
import type { TokenCommands, TokenView } from './token-commands';
import { ValidationError } from './validation';

type Impl = GrpcServiceImplementation<ServiceMethods<typeof TokenService>>;

const ROLE_VALUES: Record<TokenView['role'], TokenRole> = {
  reader: TokenRole.READER,
  writer: TokenRole.WRITER,
  admin: TokenRole.ADMIN,
  agent: TokenRole.AGENT,
};

/** The role a wire value names; undefined for UNSPECIFIED (refused as missing) and unknown values. */
function roleName(value: TokenRole): TokenView['role'] | undefined {
  return (Object.keys(ROLE_VALUES) as Array<TokenView['role']>).find((name) => ROLE_VALUES[name] === value);
}

export function tokenServiceImplementation(deps: { tokens: TokenCommands; auth: Authenticator; logger: Logger }): Impl {
  const unary = unaryHandlers(deps.auth, deps.logger);
  return {
    createToken: unary('admin', async (req, namespace) => {
      const role = roleName(req.role);
      if (role === undefined && req.role !== TokenRole.UNSPECIFIED) {
        throw new ValidationError('role', `role ${req.role} is not a TokenRole value`);
      }
      const body: Record<string, unknown> = {};
      if (role !== undefined) body.role = role;
      if (req.name) body.name = req.name;
      if (req.expiresInSeconds) body.expiresInSeconds = req.expiresInSeconds;
      if (req.namespace) body.namespace = req.namespace;
      const created = await deps.tokens.create(namespace, body);
      return { token: toTokenMessage(created.token), secret: created.secret };
    }),
    listTokens: unary('admin', async (_req, namespace) => ({ tokens: (await deps.tokens.list(namespace)).map(toTokenMessage) })),
    revokeToken: unary('admin', async (req, namespace) => {
      await deps.tokens.revoke(namespace, req.tokenId);
      return {};
    }),
    whoami: unary('any', async (_req, namespace, principal) => ({
      namespace,
      role: principal.role,
      tokenName: principal.tokenName ?? '',
      tokenId: principal.tokenId ?? '',
    })),
  } satisfies Impl;
}

function toTokenMessage(token: TokenView) {
  return {
    id: token.id,
    namespace: token.namespace,
    role: ROLE_VALUES[token.role],
    name: token.name ?? '',
    createdAt: timestampFromDate(new Date(token.createdAt)),
    ...(token.expiresAt ? { expiresAt: timestampFromDate(new Date(token.expiresAt)) } : {}),
    ...(token.revokedAt ? { revokedAt: timestampFromDate(new Date(token.revokedAt)) } : {}),
  };
}
