/**
 * @kairos/cli — the `kairos` command line, also usable as a library:
 * `runCli(argv, io)` runs one command against injected streams and returns the
 * exit code.
 */
export { runCli, type RunCliOptions } from './run';
export type { CliIo, TextSink } from './io';
export { ExitCode } from './errors';
export type { ProcessModules, AgentModule, CoordinatorModule, StoreModule } from './commands/process-modules';
