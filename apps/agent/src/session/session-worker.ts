/**
 * Entry point of the session worker thread: a thin shim that serves an
 * AgentSession on `parentPort`. All logic lives in session.ts. The main
 * thread loads the compiled form of this file (dist/session-worker.js); see
 * session-thread.ts and docs/decisions/0005-renewal-off-the-handler-thread.md.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { SessionConfig } from './session';
import { serveSession } from './session-port';

if (parentPort === null) {
  throw new Error('session-worker.js must be started as a worker thread (see session-thread.ts)');
}
serveSession(parentPort, workerData as SessionConfig);
