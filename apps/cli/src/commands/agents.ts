/** `kairos agents`: the agents connected to the coordinators; `kairos whoami`: the caller. */
import { agentJson, type Agent } from '@kairos/client';
import type { Command } from 'commander';
import { globalOptions, withClient } from '../context';
import type { CliIo } from '../io';
import { formatTable, formatTime, NONE, writeJson } from '../output';

export function registerAgentsCommand(program: Command, io: CliIo): void {
  program
    .command('agents')
    .description('list connected agents')
    .action(async (_flags: unknown, command: Command) => {
      const globals = globalOptions(command, io);
      const agents = await withClient(globals, (client) => client.listAgents());
      if (globals.json) writeJson(io.stdout, agents.map(agentJson));
      else io.stdout.write(agents.length === 0 ? 'no agents connected\n' : formatTable(AGENT_COLUMNS, agents.map(agentRow)));
    });
}

const AGENT_COLUMNS = [
  'AGENT',
  'TASKS',
  'IN FLIGHT',
  'STATE',
  'CONNECTED',
  'LAST HEARTBEAT',
  'COORDINATOR',
  'VERSION',
] as const;

function agentRow(agent: Agent): string[] {
  return [
    agent.agentId,
    agent.tasks.join(','),
    `${agent.inFlight}/${agent.capacity}`,
    agentState(agent),
    formatTime(agent.connectedAt),
    formatTime(agent.lastHeartbeatAt),
    agent.coordinatorId ?? NONE,
    agent.version ?? NONE,
  ];
}

/** draining, quarantined (no work until the time shown), probation (one lease at a time), or ready. */
function agentState(agent: Agent): string {
  if (agent.draining) return 'draining';
  if (agent.quarantinedUntil !== null) return `quarantined until ${formatTime(agent.quarantinedUntil)}`;
  return agent.probation ? 'probation' : 'ready';
}

/** `kairos whoami`: the token the CLI is using, as the coordinator sees it. */
export function registerWhoamiCommand(program: Command, io: CliIo): void {
  program
    .command('whoami')
    .description("the caller's token: namespace, role and name (any valid token)")
    .action(async (_flags: unknown, command: Command) => {
      const globals = globalOptions(command, io);
      const me = await withClient(globals, (client) => client.whoami());
      if (globals.json) writeJson(io.stdout, me);
      else io.stdout.write(`${me.role} of namespace ${me.namespace}${me.tokenName ? ` (token "${me.tokenName}", ${me.tokenId})` : me.tokenId ? ` (token ${me.tokenId})` : ''}\n`);
    });
}
