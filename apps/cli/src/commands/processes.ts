/**
 * `kairos migrate | coordinator | agent | dev`: thin wiring over
 * @kairos/store, @kairos/coordinator and @kairos/agent.
 *
 * Flags mirror the environment variables in docs/operations.md and are
 * handed to the packages' `…OptionsFromEnv(env, overrides)` as overrides, which
 * win over the environment. A configuration those functions reject is a usage
 * error (exit code 2).
 *
 * Long-running commands ask for the stop signal before they start anything, so
 * a Ctrl-C during start-up (embedded PostgreSQL takes a second or two) still
 * leads to a clean stop once start-up has finished.
 */
import type { Command } from 'commander';
import { UsageError } from '../errors';
import { wholeNumber } from '../flags';
import type { CliIo } from '../io';
import { writeJson } from '../output';
import { ensureDevTokens, type DevTokens } from './dev-tokens';
import type { AgentOverrides, CoordinatorOverrides, ProcessModules, StoreModule } from './process-modules';

const DEFAULT_DATA_DIR = '.kairos';

/** The dev stack's agent: the built-in tasks except exec, which stays off. */
const DEV_AGENT = { tasks: ['http', 'sleep'], capacity: 8 } as const;

function devAgentOverrides(coordinatorAddress: string, token: string): AgentOverrides {
  return { coordinator: coordinatorAddress, tasks: [...DEV_AGENT.tasks], capacity: DEV_AGENT.capacity, execAllow: [], token };
}

interface DatabaseFlags {
  databaseUrl?: string;
  dataDir?: string;
}

interface CoordinatorFlags extends DatabaseFlags {
  host?: string;
  insecure?: boolean;
  httpPort?: number;
  grpcPort?: number;
  leaseMs?: number;
}

interface AgentFlags {
  coordinator?: string;
  agentId?: string;
  tasks?: string[];
  capacity?: number;
  preDispatchQueue?: number;
}

export function registerProcessCommands(program: Command, io: CliIo, modules: ProcessModules): void {
  program
    .command('migrate')
    .description('apply pending database migrations (embedded PostgreSQL when no DATABASE_URL)')
    .option('--database-url <url>', 'PostgreSQL to migrate (env DATABASE_URL)')
    .option('--data-dir <dir>', `embedded PostgreSQL folder (env KAIROS_DATA_DIR, default ${DEFAULT_DATA_DIR})`)
    .action(async (flags: DatabaseFlags, command: Command) => {
      const databaseUrl = flags.databaseUrl ?? nonEmpty(io.env['DATABASE_URL']);
      const dataDir = flags.dataDir ?? nonEmpty(io.env['KAIROS_DATA_DIR']) ?? DEFAULT_DATA_DIR;
      const applied = await migrate(modules.store(), databaseUrl, dataDir);
      if (command.optsWithGlobals<{ json?: boolean }>().json === true) writeJson(io.stdout, { applied });
      else if (applied.length === 0) io.stdout.write('database is up to date\n');
      else io.stdout.write(applied.map((name) => `applied ${name}\n`).join(''));
    });

  addCoordinatorFlags(
    program.command('coordinator').description('run a coordinator (gRPC + REST); embedded PostgreSQL when no DATABASE_URL'),
  )
    .option('--insecure', 'admit calls and agents without a token (env KAIROS_INSECURE=true); logged as a warning')
    .action(async (flags: CoordinatorFlags) => {
    const stopRequested = io.stopRequested();
    const { startCoordinator, coordinatorOptionsFromEnv } = modules.coordinator();
    const options = configuration(() => coordinatorOptionsFromEnv(io.env, coordinatorOverrides(flags)));
    const coordinator = await startCoordinator(options);
    await stopRequested;
    await coordinator.stop();
  });

  addAgentFlags(program.command('agent').description('run an agent that executes jobs for a coordinator')).action(
    async (flags: AgentFlags) => {
      const stopRequested = io.stopRequested();
      const { startAgent, agentOptionsFromEnv } = modules.agent();
      const options = configuration(() => agentOptionsFromEnv(io.env, agentOverrides(flags)));
      const agent = await startAgent(options);
      await stopRequested;
      await agent.drain();
    },
  );

  addCoordinatorFlags(
    program
      .command('dev')
      .description('coordinator + one local agent (http, sleep) on embedded PostgreSQL, on 127.0.0.1, with tokens: what `npm start` runs'),
  ).action(async (flags: CoordinatorFlags) => {
    const stopRequested = io.stopRequested();
    const { startCoordinator, coordinatorOptionsFromEnv } = modules.coordinator();
    const { startAgent, agentOptionsFromEnv } = modules.agent();
    // Loopback unless KAIROS_HOST / --host says otherwise; authentication always on.
    const overrides: CoordinatorOverrides = {
      host: nonEmpty(io.env['KAIROS_HOST']) ?? '127.0.0.1',
      ...coordinatorOverrides(flags),
      insecure: false,
    };
    const options = configuration(() => coordinatorOptionsFromEnv(io.env, overrides));
    const dataDir = flags.dataDir ?? nonEmpty(io.env['KAIROS_DATA_DIR']) ?? DEFAULT_DATA_DIR;
    const coordinator = await startCoordinator(options);
    let agent;
    let tokens: DevTokens;
    try {
      tokens = await ensureDevTokens(modules.store(), coordinator.databaseUrl, dataDir);
      agent = await startAgent(
        configuration(() => agentOptionsFromEnv(io.env, devAgentOverrides(coordinator.grpcAddress, tokens.agent))),
      );
    } catch (error: unknown) {
      await coordinator.stop();
      throw error;
    }
    io.stdout.write(devBanner(coordinator, new Date(), io.env['KAIROS_HTTP_ALLOW_HOSTS'], tokens));
    await stopRequested;
    await agent.drain();
    await coordinator.stop();
  });
}

function addCoordinatorFlags(command: Command): Command {
  return command
    .option('--host <address>', 'listen address (env KAIROS_HOST; coordinator default 0.0.0.0, dev 127.0.0.1)')
    .option('--http-port <port>', 'REST port (env KAIROS_HTTP_PORT, default 8080)', wholeNumber(0))
    .option('--grpc-port <port>', 'gRPC port (env KAIROS_GRPC_PORT, default 50051)', wholeNumber(0))
    .option('--lease-ms <ms>', 'lease length: crash detection time (env KAIROS_LEASE_MS, default 10000)', wholeNumber(1))
    .option('--data-dir <dir>', `embedded PostgreSQL folder (env KAIROS_DATA_DIR, default ${DEFAULT_DATA_DIR})`)
    .option('--database-url <url>', 'PostgreSQL to use instead of the embedded one (env DATABASE_URL)');
}

function addAgentFlags(command: Command): Command {
  return command
    .option('--coordinator <host:port>', 'coordinator gRPC address (env KAIROS_COORDINATOR)')
    .option('--agent-id <id>', 'identifier shown in `kairos agents` (env KAIROS_AGENT_ID)')
    .option('--tasks <list>', 'comma-separated task names to serve (env KAIROS_AGENT_TASKS)', taskList)
    .option('--capacity <n>', 'jobs run at once (env KAIROS_AGENT_CAPACITY)', wholeNumber(1))
    .option(
      '--pre-dispatch-queue <n>',
      'jobs not yet due held beyond capacity, started at their due instant as slots free; 0: none (env KAIROS_PREDISPATCH_QUEUE, default 32 x capacity)',
      wholeNumber(0),
    );
}

function taskList(value: string): string[] {
  return value
    .split(',')
    .map((task) => task.trim())
    .filter((task) => task !== '');
}

/** Applies pending migrations to DATABASE_URL, or to an embedded cluster started (and stopped) for the purpose. */
async function migrate(store: StoreModule, databaseUrl: string | undefined, dataDir: string): Promise<string[]> {
  if (databaseUrl !== undefined) return migrateAt(store, databaseUrl);
  // The coordinator, too, uses the embedded cluster's default database (`url`).
  const embedded = await store.startEmbeddedPostgres({ dataDir });
  try {
    return await migrateAt(store, embedded.url);
  } finally {
    await embedded.stop();
  }
}

async function migrateAt(store: StoreModule, connectionString: string): Promise<string[]> {
  const handle = store.createStore(store.createPool({ connectionString }));
  try {
    return await handle.migrate();
  } finally {
    await handle.close();
  }
}

function coordinatorOverrides(flags: CoordinatorFlags): CoordinatorOverrides {
  return definedOnly({
    host: flags.host,
    insecure: flags.insecure,
    httpPort: flags.httpPort,
    grpcPort: flags.grpcPort,
    leaseMs: flags.leaseMs,
    dataDir: flags.dataDir,
    databaseUrl: flags.databaseUrl,
  });
}

function agentOverrides(flags: AgentFlags): AgentOverrides {
  return definedOnly({
    coordinator: flags.coordinator,
    agentId: flags.agentId,
    tasks: flags.tasks,
    capacity: flags.capacity,
    preDispatchQueue: flags.preDispatchQueue,
  });
}

/** Runs an `…OptionsFromEnv` call; what it rejects is a configuration (usage) error. */
function configuration<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error: unknown) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function definedOnly<T extends object>(value: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}

/** A connection string with its password replaced by `***`, for printing. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unprintable connection string)';
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/** What `kairos dev` prints once everything is up: where things are, and two ways to schedule a first job. */
export function devBanner(
  coordinator: { httpUrl: string; grpcAddress: string; databaseUrl: string },
  now: Date,
  httpAllowHosts: string | undefined,
  tokens: { admin: string; adminFile: string },
): string {
  const runAt = new Date(now.getTime() + 5_000).toISOString().replace(/\.\d{3}Z$/, 'Z');
  const address = coordinator.grpcAddress === '127.0.0.1:50051' ? '' : ` --address ${coordinator.grpcAddress}`;
  const body = JSON.stringify({ task: 'sleep', payload: { seconds: 1 }, runAt });
  return [
    '',
    `Kairos dev: a coordinator and one agent (tasks ${DEV_AGENT.tasks.join(', ')}; ${DEV_AGENT.capacity} slots) are running.`,
    '',
    `  REST API      ${coordinator.httpUrl}`,
    `  gRPC          ${coordinator.grpcAddress}`,
    `  DATABASE_URL  ${redactUrl(coordinator.databaseUrl)}`,
    `  admin token   ${tokens.admin}`,
    `                (in ${tokens.adminFile}, mode 0600; the CLI uses it when no --token or KAIROS_TOKEN is given)`,
    '',
    'Schedule a job that sleeps for a second, a few seconds from now:',
    '',
    `  curl -sS -X POST ${coordinator.httpUrl}/jobs -H 'content-type: application/json' \\`,
    `    -H "authorization: Bearer $(cat ${tokens.adminFile})" \\`,
    `    -d '${body}'`,
    `  npx kairos${address} jobs create --task sleep --payload '{"seconds":1}' --run-at ${runAt}`,
    '',
    `Then: npx kairos${address} jobs list · npx kairos${address} runs <jobId> · npx kairos${address} agents`,
    httpAllowHosts === undefined || httpAllowHosts.trim() === ''
      ? 'The http task refuses every URL until KAIROS_HTTP_ALLOW_HOSTS lists hosts (e.g. localhost:3000).'
      : `The http task may call: ${httpAllowHosts}.`,
    'Ctrl-C drains the agent and stops the coordinator.',
    '',
  ].join('\n');
}
