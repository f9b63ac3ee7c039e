/**
 * Glue between an AgentSession and a message port. The worker thread
 * (session-worker.ts) calls this with its `parentPort`; tests call it with one
 * end of an in-thread MessageChannel, so the session logic runs unchanged
 * without a build step.
 */
import { AgentSession, type SessionConfig, type SessionDeps } from './session';
import { batchingPoster, unbatching } from '../runtime/thread-batch';
import type { ToExecutor, ToSession } from '../runtime/thread-messages';

/**
 * The part of `MessagePort` / `parentPort` the session needs. Messages cross
 * in batches (thread-batch.ts): arrays, in posting order.
 */
export interface SessionPort {
  postMessage(batch: readonly ToExecutor[]): void;
  on(event: 'message', listener: (batch: readonly ToSession[]) => void): unknown;
}

/** Starts a session that receives ToSession batches from `port` and posts ToExecutor batches to it. */
export function serveSession(port: SessionPort, config: SessionConfig, deps: SessionDeps = {}): AgentSession {
  const session = new AgentSession(config, { post: batchingPoster<ToExecutor>((batch) => port.postMessage(batch)) }, deps);
  port.on('message', unbatching<ToSession>((message) => session.handle(message)));
  session.start();
  return session;
}
