/**
 * Everything the CLI touches outside itself, passed in: output streams, the
 * environment, and the stop signal of long-running commands. main.ts wires the
 * real process; tests pass buffers and a promise they resolve themselves.
 */

/** Where text goes: process.stdout / process.stderr, or a buffer in tests. */
export interface TextSink {
  write(text: string): unknown;
}

export interface CliIo {
  /** Input for commands that read it (`jobs create-many`): process.stdin, or text in tests. */
  stdin: AsyncIterable<string | Uint8Array>;
  stdout: TextSink;
  stderr: TextSink;
  env: Readonly<Record<string, string | undefined>>;
  /**
   * Resolves with the signal's name (SIGINT, SIGTERM) when the process is asked
   * to stop. Long-running commands (`coordinator`, `agent`, `dev`) wait on it.
   */
  stopRequested(): Promise<string>;
}
