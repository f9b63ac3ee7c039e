#!/usr/bin/env node
/**
 * Process entry of an agent: `node apps/agent/dist/main.js` (the `kairos agent`
 * command does the same). Configuration comes from the environment (see
 * config.ts); logs are JSON lines on stdout.
 *
 * With KAIROS_AGENT_HEALTH_PORT set, probes get /livez and /readyz (runtime/health.ts).
 *
 * SIGTERM or SIGINT drains (see RunningAgent.drain) and exits 0. A second
 * signal while draining closes at once and exits 1. A configuration error
 * exits 2; a crashed session thread exits 1.
 */
import { pino, type Logger } from 'pino';
import { startAgent, type RunningAgent } from './runtime/agent';
import { startHealthServer, type HealthServer } from './runtime/health';
import { AGENT_VERSION, agentOptionsFromEnv, type AgentOptions } from './config';
import { tracingFromEnv } from '@kairos/tracing';

export interface MainOptions {
  readonly env?: NodeJS.ProcessEnv;
  /** Extra options (custom handlers, ...) over the environment. */
  readonly overrides?: Partial<AgentOptions>;
  readonly logger?: Logger;
}

/** Starts an agent and wires signals to drain/exit. Resolves with the running agent. */
export async function runAgentProcess(options: MainOptions = {}): Promise<RunningAgent | undefined> {
  let logger = options.logger ?? pino({ name: 'kairos-agent' });
  let agentOptions: AgentOptions;
  try {
    const env = options.env ?? process.env;
    agentOptions = agentOptionsFromEnv(env, { tracing: tracingFromEnv('kairos-agent', AGENT_VERSION, env), ...options.overrides, logger });
  } catch (error: unknown) {
    logger.fatal({ err: error }, 'invalid agent configuration');
    process.exitCode = 2;
    return undefined;
  }
  const agent = await startAgent(agentOptions);
  // The agent binds agentId to its own lines; do the same for this file's.
  logger = logger.child({ agentId: agent.agentId });
  let health: HealthServer | undefined;
  if (agentOptions.health) {
    try {
      health = await startHealthServer(agent.events, agentOptions.health);
      logger.info({ healthPort: health.port, host: agentOptions.health.host }, 'health endpoint listening (/livez, /readyz)');
    } catch (error: unknown) {
      logger.fatal({ err: error }, 'health endpoint could not listen (KAIROS_AGENT_HEALTH_PORT)');
      await agent.close();
      process.exitCode = 2;
      return undefined;
    }
  }
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (stopping) {
      logger.warn({ signal }, 'second signal while draining: closing now');
      void agent.close().finally(() => process.exit(1));
      return;
    }
    stopping = true;
    health?.setDraining();
    logger.info({ signal }, 'signal received: draining');
    agent.drain().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'drain failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  agent.events.on('failed', ({ error }) => {
    logger.fatal({ err: error }, 'agent failed');
    process.exit(1);
  });
  return agent;
}

if (require.main === module) {
  runAgentProcess().catch((error: unknown) => {
    pino({ name: 'kairos-agent' }).fatal({ err: error }, 'agent could not start');
    process.exit(1);
  });
}
