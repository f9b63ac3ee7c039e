/** Jobs: filter by state and task (the API) and by name (this page), page with the API cursor, jump to an id. */
import { api, type Job } from './api';
import { h, replace, time } from './dom';
import { badge, problem, STATES, type View } from './context';

export function jobsView(view: View, params: URLSearchParams): void {
  const state = params.get('state') ?? '';
  const task = params.get('task') ?? '';
  const name = params.get('name') ?? '';
  const cursor = params.get('cursor');
  const limit = params.get('limit') ?? '50';
  const results = h('div', { 'aria-live': 'polite' });

  const go = (changes: Record<string, string | null>) => {
    const next = new URLSearchParams(params);
    for (const [key, value] of Object.entries(changes)) {
      if (value === null || value === '') next.delete(key);
      else next.set(key, value);
    }
    location.hash = `#/jobs?${next}`;
  };

  const filters = h(
    'form',
    {
      class: 'filters',
      'aria-label': 'Filter jobs',
      onsubmit: (event: Event) => {
        event.preventDefault();
        const form = new FormData(event.target as HTMLFormElement);
        go({ state: String(form.get('state')), task: String(form.get('task')).trim(), name: String(form.get('name')).trim(), limit: String(form.get('limit')), cursor: null, back: null });
      },
    },
    h('label', null, 'State ', h('select', { name: 'state' }, h('option', { value: '' }, 'any'), STATES.map((s) => h('option', { value: s, selected: s === state }, s)))),
    h('label', null, 'Task ', h('input', { name: 'task', value: task, size: 12, autocomplete: 'off' })),
    h('label', null, 'Name contains ', h('input', { name: 'name', value: name, size: 16, autocomplete: 'off' })),
    h('label', null, 'Per page ', h('select', { name: 'limit' }, ['20', '50', '100', '500'].map((n) => h('option', { value: n, selected: n === limit }, n)))),
    h('button', { type: 'submit' }, 'Apply'),
  );
  const jump = h(
    'form',
    {
      class: 'filters',
      'aria-label': 'Open a job by id',
      onsubmit: (event: Event) => {
        event.preventDefault();
        const id = String(new FormData(event.target as HTMLFormElement).get('id')).trim();
        if (id) location.hash = `#/jobs/${encodeURIComponent(id)}`;
      },
    },
    h('label', null, 'Job id ', h('input', { name: 'id', size: 38, autocomplete: 'off', placeholder: '0193…' })),
    h('button', { type: 'submit' }, 'Open'),
  );
  replace(view.main, h('h1', null, 'Jobs'), filters, jump, results);

  view.every(5000, async () => {
    const query = new URLSearchParams({ limit });
    if (state) query.set('state', state);
    if (task) query.set('task', task);
    if (name) query.set('name', name);
    if (cursor) query.set('cursor', cursor);
    let page: { jobs: Job[]; nextCursor: string | null };
    try {
      page = await api.jobs(query);
    } catch (error) {
      replace(results, problem(error));
      return;
    }
    if (view.left()) return;
    const shown = page.jobs;
    const back = params.get('back');
    replace(
      results,
      h('p', { class: 'hint' }, `${shown.length} job${shown.length === 1 ? '' : 's'} on this page${name ? ` whose name starts with "${name}"` : ''}; creation order.`),
      h(
        'table',
        null,
        h('caption', { class: 'visually-hidden' }, 'Jobs'),
        h('thead', null, h('tr', null, ['Job', 'Task', 'State', 'Schedule', 'Next run', 'Attempt', 'Held by'].map((label) => h('th', { scope: 'col' }, label)))),
        h(
          'tbody',
          null,
          shown.map((job) =>
            h(
              'tr',
              null,
              h('td', null, h('a', { href: `#/jobs/${job.jobId}` }, job.name ?? job.jobId), job.name ? h('div', { class: 'id' }, job.jobId) : null),
              h('td', null, job.task),
              h('td', null, badge(job.state)),
              h('td', null, job.schedule ? `${job.schedule} (${job.timezone})` : 'one-off'),
              h('td', null, time(job.nextRunAt)),
              h('td', null, `${job.attempt}/${job.maxAttempts}`),
              h('td', null, job.leaseOwner ?? ''),
            ),
          ),
        ),
      ),
      h(
        'nav',
        { class: 'pager', 'aria-label': 'Pages' },
        cursor ? h('button', { type: 'button', onclick: () => go({ cursor: null, back: null }) }, 'First page') : null,
        cursor && back ? h('button', { type: 'button', onclick: () => history.back() }, 'Previous page') : null,
        page.nextCursor ? h('button', { type: 'button', onclick: () => go({ cursor: page.nextCursor, back: '1' }) }, 'Next page') : null,
      ),
    );
  });
}
