/**
 * A CliIo for tests: stdout and stderr collected as strings, a chosen
 * environment, and a stop signal the test sends itself. Test-only (excluded
 * from the build by tsconfig).
 */
import type { CliIo } from '../io';

export interface CapturedIo {
  io: CliIo;
  stdout(): string;
  stderr(): string;
  /** Delivers the stop signal to a long-running command (as SIGTERM would). */
  requestStop(signal?: string): void;
  /** Resolves once the command under test has asked for the stop signal. */
  stopAsked: Promise<void>;
}

export function capturedIo(env: Record<string, string> = {}, stdin = ''): CapturedIo {
  const out: string[] = [];
  const err: string[] = [];
  let deliver: (signal: string) => void = () => undefined;
  let asked: () => void = () => undefined;
  const stopAsked = new Promise<void>((resolve) => {
    asked = resolve;
  });
  const stop = new Promise<string>((resolve) => {
    deliver = resolve;
  });
  return {
    io: {
      stdin: (async function* () {
        if (stdin !== '') yield stdin;
      })(),
      stdout: { write: (text: string) => out.push(text) },
      stderr: { write: (text: string) => err.push(text) },
      env,
      stopRequested: () => {
        asked();
        return stop;
      },
    },
    stdout: () => out.join(''),
    stderr: () => err.join(''),
    requestStop: (signal = 'SIGTERM') => deliver(signal),
    stopAsked,
  };
}
