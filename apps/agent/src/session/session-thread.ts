/**
 * Main-thread side of the session: starts the session in a worker thread (the
 * production path) or, for tests, in this thread behind a MessageChannel. Both
 * speak the same messages (thread-messages.ts), batched per event-loop turn
 * (thread-batch.ts), so everything above this file is identical in the two
 * modes and sees single messages.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { MessageChannel, Worker } from 'node:worker_threads';
import type { SessionConfig, SessionDeps } from './session';
import { serveSession } from './session-port';
import { batchingPoster, unbatching } from '../runtime/thread-batch';
import type { ToExecutor, ToSession } from '../runtime/thread-messages';
import { TO_EXECUTOR, TO_SESSION } from '../runtime/thread-wire';

export interface SessionChannel {
  post(message: ToSession): void;
  /** Stops the session thread (or closes the in-thread ports). */
  dispose(): Promise<void>;
}

export interface SessionListeners {
  onMessage(message: ToExecutor): void;
  /** The session thread died or could not start. */
  onFailure(error: Error): void;
}

/**
 * The compiled worker entry. Beside this file when running from dist/; when
 * running from sources (jest, ts loaders) the build output next to src/.
 */
export function resolveWorkerScript(): string {
  const beside = path.join(__dirname, 'session-worker.js');
  if (existsSync(beside)) return beside;
  const built = path.join(__dirname, '..', '..', 'dist', 'session', 'session-worker.js');
  if (existsSync(built)) return built;
  throw new Error(`session worker not found at ${beside}: build the agent first (npx tsc -b apps/agent)`);
}

/**
 * In the single-file executable (tools/scripts/build-agent-sea.mjs) the worker
 * is not a file: it is a bundle stored as an asset of the executable, started
 * from source.
 */
function singleExecutableWorker(): string | undefined {
  try {
    const sea = require('node:sea') as typeof import('node:sea');
    return sea.isSea() ? sea.getAsset(SEA_WORKER_ASSET, 'utf8') : undefined;
  } catch {
    return undefined; // a Node without node:sea
  }
}

/** The asset name of the bundled worker in the single-file executable. */
export const SEA_WORKER_ASSET = 'session-worker.js';

export function startSessionWorker(config: SessionConfig, listeners: SessionListeners, script?: string): SessionChannel {
  const embedded = script === undefined ? singleExecutableWorker() : undefined;
  const worker =
    embedded === undefined ? new Worker(script ?? resolveWorkerScript(), { workerData: config }) : new Worker(embedded, { eval: true, workerData: config });
  let disposing = false;
  let failed = false;
  const fail = (error: Error): void => {
    if (disposing || failed) return;
    failed = true;
    listeners.onFailure(error);
  };
  worker.on('message', unbatching<ToExecutor>(TO_EXECUTOR, (message) => listeners.onMessage(message)));
  worker.on('error', (error: Error) => fail(new Error('the session thread crashed', { cause: error })));
  worker.on('exit', (code) => fail(new Error(`the session thread exited unexpectedly (code ${code})`)));
  return {
    post: batchingPoster<ToSession>(TO_SESSION, (packed) => worker.postMessage(packed)),
    dispose: async () => {
      disposing = true;
      await worker.terminate();
    },
  };
}

/** Same protocol, same thread: for tests of the session logic without a build. */
export function startSessionInline(config: SessionConfig, listeners: SessionListeners, deps: SessionDeps = {}): SessionChannel {
  const { port1, port2 } = new MessageChannel();
  const session = serveSession(port1, config, deps);
  port2.on('message', unbatching<ToExecutor>(TO_EXECUTOR, (message) => listeners.onMessage(message)));
  return {
    post: batchingPoster<ToSession>(TO_SESSION, (packed) => port2.postMessage(packed)),
    dispose: async () => {
      session.handle({ type: 'close' });
      port1.close();
      port2.close();
    },
  };
}
