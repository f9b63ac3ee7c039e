/**
 * `kairos webhooks create | list | delete | deliveries`: failure notifications,
 * through a coordinator (WebhookService) with an admin token of the namespace.
 * `create` prints the signing secret as its only stdout line: it is shown once.
 */
import { deliveryJson, WEBHOOK_EVENTS, webhookJson, type WebhookDelivery, type WebhookEvent } from '@kairos/client';
import { InvalidArgumentError, type Command } from 'commander';
import { globalOptions, withClient } from '../context';
import { wholeNumber } from '../flags';
import type { CliIo } from '../io';
import { formatTable, formatTime, NONE, writeJson } from '../output';

function eventArg(value: string, previous: WebhookEvent[] = []): WebhookEvent[] {
  if (!(WEBHOOK_EVENTS as readonly string[]).includes(value)) throw new InvalidArgumentError(`must be one of ${WEBHOOK_EVENTS.join(', ')}`);
  return [...previous, value as WebhookEvent];
}

export function registerWebhookCommands(program: Command, io: CliIo): void {
  const webhooks = program.command('webhooks').description('failure notifications: webhooks told of DEAD jobs, failed and missed occurrences (admin token)');

  webhooks
    .command('create')
    .description('create a webhook and print its signing secret (shown once)')
    .requiredOption('--url <url>', 'where deliveries are POSTed (http or https)')
    .option('--event <event>', `repeatable; one of ${WEBHOOK_EVENTS.join(', ')} (default: all)`, eventArg)
    .option('--job <jobId>', "only this job's events")
    .option('--description <text>', 'a note on what it is for')
    .action(async (flags: { url: string; event?: WebhookEvent[]; job?: string; description?: string }, command: Command) => {
      const globals = globalOptions(command, io);
      const created = await withClient(globals, (client) =>
        client.createWebhook({
          url: flags.url,
          ...(flags.event ? { events: flags.event } : {}),
          ...(flags.job ? { jobId: flags.job } : {}),
          ...(flags.description ? { description: flags.description } : {}),
        }),
      );
      if (globals.json) writeJson(io.stdout, { webhook: webhookJson(created.webhook), secret: created.secret });
      else io.stdout.write(`${created.secret}\n`);
    });

  webhooks
    .command('list')
    .description("the namespace's webhooks")
    .action(async (_flags: unknown, command: Command) => {
      const globals = globalOptions(command, io);
      const list = await withClient(globals, (client) => client.listWebhooks());
      if (globals.json) writeJson(io.stdout, list.map(webhookJson));
      else
        io.stdout.write(
          list.length === 0
            ? 'no webhooks\n'
            : formatTable(['ID', 'URL', 'EVENTS', 'JOB', 'CREATED', 'DESCRIPTION'], list.map((w) => [w.id, w.url, w.events.join(','), w.jobId ?? 'all', formatTime(w.createdAt), w.description ?? NONE])),
        );
    });

  webhooks
    .command('delete <webhookId>')
    .description('delete a webhook and its deliveries')
    .action(async (webhookId: string, _flags: unknown, command: Command) => {
      const globals = globalOptions(command, io);
      await withClient(globals, (client) => client.deleteWebhook(webhookId));
      if (globals.json) writeJson(io.stdout, { deleted: webhookId });
      else io.stdout.write(`deleted ${webhookId}\n`);
    });

  webhooks
    .command('deliveries <webhookId>')
    .description("a webhook's deliveries, newest first")
    .option('--limit <n>', 'at most this many (1 to 200, default 50)', wholeNumber(1))
    .option('--cursor <cursor>', 'the next page, from a previous answer')
    .action(async (webhookId: string, flags: { limit?: number; cursor?: string }, command: Command) => {
      const globals = globalOptions(command, io);
      const page = await withClient(globals, (client) =>
        client.listWebhookDeliveries(webhookId, { ...(flags.limit ? { limit: flags.limit } : {}), ...(flags.cursor ? { cursor: flags.cursor } : {}) }),
      );
      if (globals.json) {
        writeJson(io.stdout, { deliveries: page.deliveries.map(deliveryJson), nextCursor: page.nextCursor });
        return;
      }
      io.stdout.write(page.deliveries.length === 0 ? 'no deliveries\n' : formatTable(['ID', 'EVENT', 'JOB', 'STATE', 'ATTEMPTS', 'LAST', 'CREATED'], page.deliveries.map(deliveryRow)));
      if (page.nextCursor !== null) io.stdout.write(`more: --cursor ${page.nextCursor}\n`);
    });
}

function deliveryRow(delivery: WebhookDelivery): string[] {
  const last = delivery.lastStatus !== null ? String(delivery.lastStatus) : (delivery.lastError ?? NONE);
  const state = delivery.state === 'pending' && delivery.nextAttemptAt ? `pending (next ${formatTime(delivery.nextAttemptAt)})` : delivery.state;
  return [delivery.id, delivery.event, delivery.jobId, state, String(delivery.attempts), last, formatTime(delivery.createdAt)];
}
