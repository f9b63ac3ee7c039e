/**
 * @kairos/agent — the Kairos agent daemon and its SDK.
 *
 *   const agent = await startAgent(agentOptionsFromEnv(process.env, {
 *     handlers: { 'send-invoice': async (payload, ctx) => { ... } },
 *   }));
 *   process.once('SIGTERM', () => void agent.drain().then(() => process.exit(0)));
 *
 * See README.md for configuration, allow-lists and the at-least-once contract
 * handlers must honour.
 */
export { startAgent, type RunningAgent } from './runtime/agent';
export { agentOptionsFromEnv, checkAgentOptions, ConfigError, AGENT_VERSION, type AgentOptions } from './config';
export type { AgentEvents, AgentEventMap, AgentEventName, LeaseInfo, RunInfo } from './runtime/events';
export type { RunResultKind } from './runtime/executor';
export {
  defineTask,
  parsePayload,
  PayloadError,
  TaskAbortedError,
  type AbortKind,
  type DefinedTask,
  type PayloadOf,
  type TaskContext,
  type TaskHandler,
} from './sdk';
export type { LeaseLossReason, LeaseLossSource } from './runtime/thread-messages';
