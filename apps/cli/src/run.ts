/**
 * runCli: parse, run one command, report any failure, and return the exit code
 * (see errors.ts for the table). Never calls process.exit.
 */
import { installedProcessModules, type ProcessModules } from './commands/process-modules';
import { ExitCode, reportError } from './errors';
import type { CliIo } from './io';
import { buildProgram } from './program';

export interface RunCliOptions {
  /** Where `migrate`, `coordinator`, `agent` and `dev` get their packages; tests inject fakes. */
  modules?: ProcessModules;
}

/** Runs `kairos <argv…>` (argv without the node and script paths). */
export async function runCli(argv: readonly string[], io: CliIo, options: RunCliOptions = {}): Promise<number> {
  const program = buildProgram(io, options.modules ?? installedProcessModules);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return ExitCode.Ok;
  } catch (error: unknown) {
    return reportError(error, io.stderr);
  }
}
