/** A small create form: task, a time or a cron schedule, payload JSON. */
import { api } from './api';
import { h, replace } from './dom';
import { problem, type View } from './context';

export function createView(view: View): void {
  const messages = h('div', { 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'create', 'aria-labelledby': 'create-title', onsubmit: (event: Event) => void submit(event) },
    h('label', null, 'Task', h('input', { name: 'task', required: true, autocomplete: 'off', list: 'known-tasks', placeholder: 'http' })),
    h('datalist', { id: 'known-tasks' }),
    h('label', null, 'Name (optional)', h('input', { name: 'name', autocomplete: 'off' })),
    h(
      'fieldset',
      null,
      h('legend', null, 'When'),
      h('label', { class: 'inline' }, h('input', { type: 'radio', name: 'kind', value: 'once', checked: true }), ' once'),
      h('label', { class: 'inline' }, h('input', { type: 'radio', name: 'kind', value: 'cron' }), ' on a cron schedule'),
      h('label', null, 'Run at (RFC 3339; empty: now)', h('input', { name: 'runAt', autocomplete: 'off', placeholder: '2030-01-01T09:00:00Z' })),
      h('label', null, 'Cron schedule (5 or 6 fields)', h('input', { name: 'schedule', autocomplete: 'off', placeholder: '*/5 * * * *' })),
      h('label', null, 'Time zone (cron only)', h('input', { name: 'timezone', autocomplete: 'off', placeholder: 'UTC' })),
    ),
    h('label', null, 'Payload (JSON object)', h('textarea', { name: 'payload', rows: 6, spellcheck: 'false' }, '{}')),
    h('label', null, 'Attempts per occurrence', h('input', { name: 'maxAttempts', type: 'number', min: 1, max: 100, value: 3 })),
    h('button', { type: 'submit' }, 'Create job'),
  );
  replace(view.main, h('h1', { id: 'create-title' }, 'New job'), form, messages);
  void api.agents().then(
    (agents) => {
      const list = form.querySelector('datalist')!;
      for (const task of new Set(agents.flatMap((agent) => agent.tasks))) list.appendChild(h('option', { value: task }));
    },
    () => undefined,
  );

  async function submit(event: Event) {
    event.preventDefault();
    const data = new FormData(form);
    const text = (key: string) => String(data.get(key) ?? '').trim();
    let payload: unknown;
    try {
      payload = JSON.parse(text('payload') || '{}');
    } catch (error) {
      replace(messages, h('p', { class: 'problem', role: 'alert' }, `The payload is not JSON: ${(error as Error).message}`));
      return;
    }
    const body: Record<string, unknown> = { task: text('task'), payload, maxAttempts: Number(text('maxAttempts') || 3) };
    if (text('name')) body['name'] = text('name');
    if (text('kind') === 'cron') {
      body['schedule'] = text('schedule');
      if (text('timezone')) body['timezone'] = text('timezone');
    } else {
      body['runAt'] = text('runAt') || new Date().toISOString();
    }
    try {
      const created = await api.create(body);
      location.hash = `#/jobs/${created.jobId}`;
    } catch (error) {
      replace(messages, problem(error));
    }
  }
}
