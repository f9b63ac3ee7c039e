/**
 * The packages behind `migrate`, `coordinator`, `agent` and `dev`, loaded only
 * when one of those commands runs: `kairos jobs list` should not pay for
 * PostgreSQL drivers, pino and fastify. The loaders are injectable so the
 * wiring can be tested without starting real processes.
 *
 * Types come from the packages themselves (only the entry points the CLI
 * calls), so a change of their signatures breaks this build, not a user's run.
 */

export type StoreModule = Pick<typeof import('@kairos/store'), 'createPool' | 'createStore' | 'startEmbeddedPostgres'>;

export type CoordinatorModule = Pick<typeof import('@kairos/coordinator'), 'startCoordinator' | 'coordinatorOptionsFromEnv'>;

export type AgentModule = Pick<typeof import('@kairos/agent'), 'startAgent' | 'agentOptionsFromEnv'>;

/** Agent settings the CLI may set from flags. */
export type AgentOverrides = Partial<import('@kairos/agent').AgentOptions>;

/** Coordinator settings the CLI may set from flags. */
export type CoordinatorOverrides = Partial<import('@kairos/coordinator').CoordinatorOptions>;

export interface ProcessModules {
  store(): StoreModule;
  coordinator(): CoordinatorModule;
  agent(): AgentModule;
}

/** The real packages, resolved through the workspace's node_modules (their dist/ must be built). */
export const installedProcessModules: ProcessModules = {
  store: () => load('@kairos/store', () => require('@kairos/store') as StoreModule),
  coordinator: () => load('@kairos/coordinator', () => require('@kairos/coordinator') as CoordinatorModule),
  agent: () => load('@kairos/agent', () => require('@kairos/agent') as AgentModule),
};

/** Turns "cannot find module" for a workspace package into a hint to build it. */
function load<T>(name: string, requireIt: () => T): T {
  try {
    return requireIt();
  } catch (cause: unknown) {
    const code = (cause as { code?: unknown } | null)?.code;
    if (code === 'MODULE_NOT_FOUND' && cause instanceof Error && cause.message.includes(name)) {
      throw new Error(`${name} is not built: run \`npm run build\` at the repository root`, { cause });
    }
    throw cause;
  }
}
