/**
 * Glue between an AgentSession and a message port. The worker thread
 * (session-worker.ts) calls this with its `parentPort`; tests call it with one
 * end of an in-thread MessageChannel, so the session logic runs unchanged
 * without a build step.
 */
import { AgentSession, type SessionConfig, type SessionDeps } from './session';
import type { ToExecutor, ToSession } from './thread-messages';

/** The part of `MessagePort` / `parentPort` the session needs. */
export interface SessionPort {
  postMessage(message: ToExecutor): void;
  on(event: 'message', listener: (message: ToSession) => void): unknown;
}

/** Starts a session that receives ToSession messages from `port` and posts ToExecutor messages to it. */
export function serveSession(port: SessionPort, config: SessionConfig, deps: SessionDeps = {}): AgentSession {
  const session = new AgentSession(config, { post: (message) => port.postMessage(message) }, deps);
  port.on('message', (message) => session.handle(message));
  session.start();
  return session;
}
