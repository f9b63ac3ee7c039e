/**
 * Process entry: `node apps/coordinator/dist/main.js` (the CLI's `kairos
 * coordinator` does the same). SIGTERM/SIGINT stop it cleanly.
 */
import { coordinatorOptionsFromEnv } from './config';
import { startCoordinator } from './coordinator';

async function main(): Promise<void> {
  const coordinator = await startCoordinator(coordinatorOptionsFromEnv(process.env));
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    coordinator.logger.info({ signal }, 'signal received');
    coordinator.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        coordinator.logger.error({ err: error }, 'unclean shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(`kairos coordinator failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
