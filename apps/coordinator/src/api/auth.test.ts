import type { LiveToken, TokenRole } from '@kairos/store';
import { ANONYMOUS, authorize, createAuthenticator } from './auth';
import { ApiError } from './errors';

function live(id: string, role: TokenRole, namespace = 'ns', expiresInMs: number | null = null): LiveToken {
  return {
    token: { id, namespace, role, name: null, createdAt: new Date(0), expiresAt: null, revokedAt: null },
    expiresInMs,
  };
}

function setup(options: { insecure?: boolean; cacheMs?: number } = {}) {
  let now = 0;
  const valid = new Map<string, LiveToken>([['kairos_writer', live('t-1', 'writer')]]);
  const lookups: string[] = [];
  const refused: number[] = [];
  const auth = createAuthenticator({
    lookup: async (secret) => {
      lookups.push(secret);
      return valid.get(secret) ?? null;
    },
    insecure: options.insecure ?? false,
    cacheMs: options.cacheMs ?? 2_000,
    nowMs: () => now,
    onRefused: () => refused.push(now),
  });
  return { auth, valid, lookups, refused, advance: (ms: number) => (now += ms) };
}

async function refusal(promise: Promise<unknown>): Promise<ApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(error)}`);
  return error;
}

describe('authenticator', () => {
  it('maps a valid bearer token to its namespace and role', async () => {
    const { auth } = setup();
    const principal = await auth.authenticate('Bearer kairos_writer');
    expect(principal).toMatchObject({ tokenId: 't-1', namespace: 'ns', role: 'writer', actor: expect.stringContaining('token t-1') });
    expect([...principal.permissions].sort()).toEqual(['read', 'write']);
  });

  it.each([
    [undefined, 'a bearer token is required'],
    ['', 'a bearer token is required'],
    ['Basic dXNlcjpwYXNz', 'must be "Bearer <token>"'],
    ['Bearer', 'must be "Bearer <token>"'],
    ['Bearer kairos_unknown', 'not valid'],
  ])('refuses %p as unauthenticated, and counts it', async (header, message) => {
    const { auth, refused } = setup();
    const error = await refusal(auth.authenticate(header));
    expect(error.kind).toBe('unauthenticated');
    expect(error.message).toContain(message);
    expect(refused).toHaveLength(1);
  });

  it('looks a token up once per cache period, and sees a revocation after it', async () => {
    const { auth, valid, lookups, advance } = setup({ cacheMs: 2_000 });
    await Promise.all([auth.authenticate('Bearer kairos_writer'), auth.authenticate('Bearer kairos_writer')]);
    advance(1_999);
    await auth.authenticate('Bearer kairos_writer');
    expect(lookups).toEqual(['kairos_writer']);

    valid.delete('kairos_writer'); // revoked
    await auth.authenticate('Bearer kairos_writer'); // still cached
    advance(2);
    expect((await refusal(auth.authenticate('Bearer kairos_writer'))).kind).toBe('unauthenticated');
    expect(lookups).toEqual(['kairos_writer', 'kairos_writer']);
  });

  it('caches a token that expires soon only until it expires', async () => {
    const { auth, valid, lookups, advance } = setup({ cacheMs: 2_000 });
    valid.set('kairos_short', live('t-2', 'reader', 'ns', 300));
    await auth.authenticate('Bearer kairos_short');
    valid.delete('kairos_short');
    advance(301);
    expect((await refusal(auth.authenticate('Bearer kairos_short'))).kind).toBe('unauthenticated');
    expect(lookups).toEqual(['kairos_short', 'kairos_short']);
  });

  it('with insecure, admits a call without a token as the anonymous admin of default, but still checks a token that is sent', async () => {
    const { auth } = setup({ insecure: true });
    expect(await auth.authenticate(undefined)).toBe(ANONYMOUS);
    expect(ANONYMOUS.namespace).toBe('default');
    expect((await refusal(auth.authenticate('Bearer kairos_unknown'))).kind).toBe('unauthenticated');
    expect((await auth.authenticate('Bearer kairos_writer')).namespace).toBe('ns');
  });
});

describe('authorize', () => {
  const principal = (role: TokenRole) => ({
    tokenId: 't',
    namespace: 'ns',
    role,
    permissions: new Set(({ reader: ['read'], writer: ['read', 'write'], admin: ['read', 'write', 'admin'], agent: ['agent'] } as const)[role]),
    actor: `token t (${role})`,
    tokenName: null,
  });

  it.each([
    ['reader', 'read', true],
    ['reader', 'write', false],
    ['writer', 'write', true],
    ['writer', 'admin', false],
    ['admin', 'admin', true],
    ['admin', 'agent', false],
    ['agent', 'agent', true],
    ['agent', 'read', false],
  ] as const)('%s may %s: %s', (role, permission, allowed) => {
    const run = () => authorize(principal(role), permission);
    if (allowed) expect(run).not.toThrow();
    else expect(run).toThrow(expect.objectContaining({ kind: 'permission_denied' }));
  });
});
