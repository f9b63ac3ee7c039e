/**
 * `kairos tokens create | list | revoke`: bearer tokens, managed straight in
 * the database (DATABASE_URL or --database-url), so the first admin token can
 * be made before any coordinator runs. An admin token can also manage its own
 * namespace's tokens over REST (`/tokens`).
 *
 * `create` prints the secret as its only stdout line: it is shown once and
 * stored only as a hash.
 */
import { KairosError, KairosErrorCode } from '@kairos/client';
import { InvalidArgumentError, type Command } from 'commander';
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
    .description('create, list and revoke bearer tokens (in the database: needs DATABASE_URL)');

  withDatabaseFlag(tokens.command('create').description('create a token and print its secret (shown once)'))
    .requiredOption('--namespace <ns>', 'namespace the token may see and act in', namespaceArg)
    .requiredOption('--role <role>', `one of ${ROLES.join(', ')}`, roleArg)
    .option('--name <text>', 'a note on what the token is for')
    .option('--expires <duration>', 'lifetime, e.g. 12h, 30d, 4w (default: never)', durationArg)
    .action(async (flags: DatabaseFlag & { namespace: string; role: Role; name?: string; expires?: number }, command: Command) => {
      const created = await withStore(modules.store(), databaseUrl(flags, io), (store) =>
        store.tokens.create({ namespace: flags.namespace, role: flags.role, name: flags.name ?? null, expiresInMs: flags.expires ?? null }),
      );
      if (json(command)) writeJson(io.stdout, { ...created.token, secret: created.secret });
      else io.stdout.write(`${created.secret}\n`);
    });

  withDatabaseFlag(tokens.command('list').description('list tokens (never their secrets)'))
    .option('--namespace <ns>', 'only this namespace', namespaceArg)
    .action(async (flags: DatabaseFlag & { namespace?: string }, command: Command) => {
      const list = await withStore(modules.store(), databaseUrl(flags, io), (store) =>
        store.tokens.list(flags.namespace === undefined ? {} : { namespace: flags.namespace }),
      );
      if (json(command)) return writeJson(io.stdout, list);
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
      const result = await withStore(modules.store(), databaseUrl(flags, io), (store) => store.tokens.revoke(id));
      if (result.kind === 'not-found') throw new KairosError(KairosErrorCode.NotFound, `token ${id} not found`);
      if (json(command)) writeJson(io.stdout, { id, revoked: true, already: result.kind === 'already-revoked' });
      else io.stdout.write(result.kind === 'revoked' ? `revoked ${id}\n` : `${id} was already revoked\n`);
    });
}

function withDatabaseFlag(command: Command): Command {
  return command.option('--database-url <url>', 'PostgreSQL holding the tokens (env DATABASE_URL)');
}

function databaseUrl(flags: DatabaseFlag, io: CliIo): string {
  const url = flags.databaseUrl ?? (io.env['DATABASE_URL'] === '' ? undefined : io.env['DATABASE_URL']);
  if (url === undefined) {
    throw new UsageError(
      'kairos tokens works on the database: set DATABASE_URL or give --database-url (kairos dev writes an admin token to <data dir>/dev-token)',
      '--database-url',
    );
  }
  return url;
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
