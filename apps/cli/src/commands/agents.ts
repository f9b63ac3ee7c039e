/** `kairos agents`: the agents connected to the coordinators. */
import type { Agent } from '@kairos/client';
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
      if (globals.json) writeJson(io.stdout, agents);
      else io.stdout.write(agents.length === 0 ? 'no agents connected\n' : formatTable(AGENT_COLUMNS, agents.map(agentRow)));
    });
}

const AGENT_COLUMNS = [
  'AGENT',
  'TASKS',
  'IN FLIGHT',
  'DRAINING',
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
    agent.draining ? 'yes' : 'no',
    formatTime(agent.connectedAt),
    formatTime(agent.lastHeartbeatAt),
    agent.coordinatorId ?? NONE,
    agent.version ?? NONE,
  ];
}
