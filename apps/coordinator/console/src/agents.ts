/** Every agent of the namespace, on whichever coordinator of the cluster it is connected to. */
import { api } from './api';
import { h, relative, replace, time } from './dom';
import { badge, problem, type View } from './context';

export function agentsView(view: View): void {
  const results = h('div', { 'aria-live': 'polite' });
  replace(view.main, h('h1', null, 'Agents'), results);
  view.every(5000, async () => {
    try {
      const agents = await api.agents();
      if (view.left()) return;
      const coordinators = new Set(agents.map((agent) => agent.coordinatorId));
      replace(
        results,
        h('p', { class: 'hint' }, `${agents.length} agents on ${coordinators.size} coordinators (namespace ${view.me.namespace}).`),
        h(
          'table',
          null,
          h('thead', null, h('tr', null, ['Agent', 'Coordinator', 'Tasks', 'In flight / capacity', 'Last heartbeat', 'Connected', 'Status', 'Version'].map((label) => h('th', { scope: 'col' }, label)))),
          h(
            'tbody',
            null,
            agents.map((agent) =>
              h(
                'tr',
                { 'data-agent': agent.agentId },
                h('td', null, agent.agentId),
                h('td', { class: 'coordinator' }, agent.coordinatorId),
                h('td', null, agent.tasks.join(', ')),
                h('td', null, `${agent.inFlight} / ${agent.capacity}`),
                h('td', null, agent.lastHeartbeatAt ? relative(agent.lastHeartbeatAt) : 'none yet'),
                h('td', null, time(agent.connectedAt)),
                h(
                  'td',
                  null,
                  agent.quarantinedUntil
                    ? [badge('QUARANTINED'), ` until `, time(agent.quarantinedUntil)]
                    : agent.draining
                      ? badge('DRAINING')
                      : agent.probation
                        ? badge('PROBATION')
                        : badge('READY'),
                ),
                h('td', null, agent.version),
              ),
            ),
          ),
        ),
      );
    } catch (error) {
      if (!view.left()) replace(results, problem(error));
    }
  });
}
