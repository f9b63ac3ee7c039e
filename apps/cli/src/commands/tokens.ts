/**
 * `kairos tokens create | list | revoke`: bearer tokens.
 *
 * - With DATABASE_URL (or --database-url): straight in the database, any
 *   namespace, so the first admin token can be made before any coordinator
 *   runs.
 * - Without: through a coordinator (TokenService, `--address`), with an admin
 *   token, for that token's own namespace.
 *
 * `create` prints the secret as its only stdout line: it is shown once and
 * stored only as a hash.
 */
import { KairosError, KairosErrorCode, tokenJson, type KairosClient } from '@kairos/client';
import { InvalidArgumentError, type Command } from 'commander';
import { globalOptions, withClient } from '../context';
import { UsageError } from '../errors';
import type { CliIo } from '../io';
import { formatTable, formatTime, NONE, writeJson } from '../output';
import type { ProcessModules, StoreModule } from './process-modules';

const ROLES = ['reader', 'writer', 'admin', 'agent'] as const;
type Role = (typeof ROLES)[number];

interface DatabaseFlag {
  databaseUrl?: string;
}

export function registerTokenCommands(program: Command, io: CliIo, modules: ProcessModules): void {
  const tokens = program
    .command('tokens')
    .description('create, list and revoke bearer tokens (in the database with DATABASE_URL, else through a coordinator with an admin token)');

  withDatabaseFlag(tokens.command('create').description('create a token and print its secret (shown once)'))
    .option('--namespace <ns>', 'namespace the token may see and act in (required with DATABASE_URL)', namespaceArg)
    .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`, roleArg)
    .option('--name <text>', 'a note on what the token is for')
    .option('--expires <duration>', 'lifetime, e.g. 12h, 30d, 4w (default: never)', durationArg)
    .action(async (flags: DatabaseFlag & { namespace?: string; role: Role; name?: string; expires?: number }, command: Command) => {
      const url = databaseUrl(flags, io);
      let created: { token: TokenRow; secret: string };
      if (url !== undefined) {
        const namespace = flags.namespace;
        if (namespace === undefined) throw new UsageError('--namespace is required when tokens are made in the database', '--namespace');
        created = await withStore(modules.store(), url, (store) =>
          store.tokens.create({ namespace, role: flags.role, name: flags.name ?? null, expiresInMs: flags.expires ?? null }),
        );
      } else {
        created = await viaCoordinator(command, io, (client) =>
          client.createToken({
            role: flags.role,
            ...(flags.namespace === undefined ? {} : { namespace: flags.namespace }),
            ...(flags.name === undefined ? {} : { name: flags.name }),
            ...(flags.expires === undefined ? {} : { expiresInSeconds: Math.ceil(flags.expires / 1000) }),
          }),
        );
      }
      if (json(command)) writeJson(io.stdout, { id: created.token.id, secret: created.secret, token: tokenJson(created.token) });
      else io.stdout.write(`${created.secret}\n`);
    });

  withDatabaseFlag(tokens.command('list').description('list tokens (never their secrets)'))
    .option('--namespace <ns>', 'only this namespace (with DATABASE_URL)', namespaceArg)
    .action(async (flags: DatabaseFlag & { namespace?: string }, command: Command) => {
      const url = databaseUrl(flags, io);
      const list: TokenRow[] =
        url !== undefined
          ? await withStore(modules.store(), url, (store) => store.tokens.list(flags.namespace === undefined ? {} : { namespace: flags.namespace }))
          : (await viaCoordinator(command, io, (client) => client.listTokens())).filter(
              (token) => flags.namespace === undefined || token.namespace === flags.namespace,
            );
      if (json(command)) return writeJson(io.stdout, { tokens: list.map(tokenJson) });
      io.stdout.write(
        list.length === 0
          ? 'no tokens\n'
          : formatTable(
              ['ID', 'NAMESPACE', 'ROLE', 'NAME', 'CREATED', 'EXPIRES', 'REVOKED'],
              list.map((token) => [
                token.id,
                token.namespace,
                token.role,
                token.name ?? NONE,
                formatTime(token.createdAt),
                formatTime(token.expiresAt),
                formatTime(token.revokedAt),
              ]),
            ),
      );
    });

  withDatabaseFlag(tokens.command('revoke').description('revoke a token: refused everywhere within seconds').argument('<id>'))
    .action(async (id: string, flags: DatabaseFlag, command: Command) => {
      const url = databaseUrl(flags, io);
      const result =
        url !== undefined
          ? await withStore(modules.store(), url, (store) => store.tokens.revoke(id))
          : await viaCoordinator(command, io, async (client) => {
              await client.revokeToken(id);
              return { kind: 'revoked' as const };
            });
      if (result.kind === 'not-found') throw new KairosError(KairosErrorCode.NotFound, `token ${id} not found`);
      if (json(command)) writeJson(io.stdout, { id, revoked: true, already: result.kind === 'already-revoked' });
      else io.stdout.write(result.kind === 'revoked' ? `revoked ${id}\n` : `${id} was already revoked\n`);
    });
}

function withDatabaseFlag(command: Command): Command {
  return command.option('--database-url <url>', 'PostgreSQL holding the tokens (env DATABASE_URL)');
}

/** A token as both backends list it. */
interface TokenRow {
  id: string;
  namespace: string;
  role: string;
  name: string | null;
  createdAt: Date | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
}

/** DATABASE_URL or --database-url; undefined: go through a coordinator. */
function databaseUrl(flags: DatabaseFlag, io: CliIo): string | undefined {
  return flags.databaseUrl ?? (io.env['DATABASE_URL'] === '' ? undefined : io.env['DATABASE_URL']);
}

function viaCoordinator<T>(command: Command, io: CliIo, use: (client: KairosClient) => Promise<T>): Promise<T> {
  return withClient(globalOptions(command, io), use);
}

function json(command: Command): boolean {
  return command.optsWithGlobals<{ json?: boolean }>().json === true;
}

async function withStore<T>(
  module: StoreModule,
  connectionString: string,
  use: (store: ReturnType<StoreModule['createStore']>) => Promise<T>,
): Promise<T> {
  const store = module.createStore(module.createPool({ connectionString, max: 1 }));
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

function roleArg(value: string): Role {
  const role = ROLES.find((candidate) => candidate === value);
  if (role === undefined) throw new InvalidArgumentError(`expected one of ${ROLES.join(', ')}.`);
  return role;
}

function namespaceArg(value: string): string {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/.test(value)) {
    throw new InvalidArgumentError('expected 1-63 letters, digits, _ . - (starting with a letter or digit).');
  }
  return value;
}

const UNIT_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `30d`, `12h`, `90m`, `4w`, `45s` -> milliseconds. */
export function durationArg(value: string): number {
  const match = /^(\d{1,6})([smhdw])$/.exec(value.trim());
  if (!match || Number(match[1]) === 0) throw new InvalidArgumentError('expected a duration such as 45s, 90m, 12h, 30d or 4w.');
  return Number(match[1]) * UNIT_MS[match[2]!]!;
}
