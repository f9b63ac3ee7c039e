/**
 * The `kairos` command tree. A fresh Command per run (commander keeps parsed
 * state on the instance), writing only to the injected streams and throwing
 * instead of exiting, so runCli decides the exit code.
 */
import { Command } from 'commander';
import { registerAgentsCommand, registerWhoamiCommand } from './commands/agents';
import { registerJobCommands } from './commands/jobs';
import { registerProcessCommands } from './commands/processes';
import type { ProcessModules } from './commands/process-modules';
import { registerRunsCommand } from './commands/runs';
import { registerScheduleCommands } from './commands/schedule';
import { registerTokenCommands } from './commands/tokens';
import { registerWebhookCommands } from './commands/webhooks';
import { DEFAULT_ADDRESS } from './context';
import type { CliIo } from './io';

export const CLI_VERSION = '0.1.0';

export function buildProgram(io: CliIo, modules: ProcessModules): Command {
  const program = new Command('kairos')
    .description('Kairos: schedule jobs and run the coordinator and agents that execute them')
    .version(CLI_VERSION, '-V, --version')
    // Settings before subcommands: commander copies them into each one it creates.
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      outputError: (text, write) => write(text),
    })
    .showHelpAfterError('(run with --help for usage)')
    .option('--address <host:port>', `coordinator gRPC address (env KAIROS_COORDINATOR, else 127.0.0.1:$KAIROS_GRPC_PORT, default ${DEFAULT_ADDRESS})`)
    .option('--token <token>', 'bearer token (env KAIROS_TOKEN)')
    .option('--json', 'machine-readable output: one JSON document on stdout')
    .option('--tls', 'use TLS with the system trust store (env KAIROS_TLS=true)')
    .option('--tls-ca <file>', 'TLS: PEM certificates to trust (implies --tls; env KAIROS_TLS_CA)')
    .option('--ca <file>', 'same as --tls-ca')
    .option('--tls-cert <file>', 'mutual TLS: client certificate chain, PEM')
    .option('--tls-key <file>', 'mutual TLS: client private key, PEM')
    .addHelpText(
      'after',
      '\nExit codes: 0 ok, 1 failure, 2 invalid argument or usage, 3 not found,\n' +
        '4 conflict (the job state forbids the call, or an idempotency key was reused).\n' +
        'Jobs run at least once: handlers must be idempotent.',
    );

  const jobs = registerJobCommands(program, io);
  registerScheduleCommands(program, jobs, io);
  registerRunsCommand(program, io);
  registerAgentsCommand(program, io);
  registerWhoamiCommand(program, io);
  registerProcessCommands(program, io, modules);
  registerTokenCommands(program, io, modules);
  registerWebhookCommands(program, io);
  return program;
}
