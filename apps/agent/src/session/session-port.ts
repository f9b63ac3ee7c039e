/**
 * Glue between an AgentSession and a message port. The worker thread
 * (session-worker.ts) calls this with its `parentPort`; tests call it with one
 * end of an in-thread MessageChannel, so the session logic runs unchanged
 * without a build step.
 */
import { AgentSession, type SessionConfig, type SessionDeps } from './session';
import { batchingPoster, unbatching } from '../runtime/thread-batch';
import type { ToExecutor, ToSession } from '../runtime/thread-messages';
import { TO_EXECUTOR, TO_SESSION } from '../runtime/thread-wire';

/**
 * The part of `MessagePort` / `parentPort` the session needs. Messages cross
 * in batches (thread-batch.ts), packed by thread-wire.ts.
 */
export interface SessionPort {
  postMessage(packed: readonly unknown[]): void;
  on(event: 'message', listener: (packed: readonly unknown[]) => void): unknown;
}

/** Starts a session that receives ToSession batches from `port` and posts ToExecutor batches to it. */
export function serveSession(port: SessionPort, config: SessionConfig, deps: SessionDeps = {}): AgentSession {
  const session = new AgentSession(config, { post: batchingPoster<ToExecutor>(TO_EXECUTOR, (packed) => port.postMessage(packed)) }, deps);
  port.on('message', unbatching<ToSession>(TO_SESSION, (message) => session.handle(message)));
  session.start();
  return session;
}
