/**
 * The Kairos console: sign in with a token, then jobs, one job, agents, live
 * and a create form, each at its own #/ address. Everything it shows comes
 * from the REST API with the operator's token; a reader sees no actions.
 */
import { api, ApiFailure, token, whenUnauthenticated, type Whoami } from './api';
import { h, replace } from './dom';
import type { View } from './context';
import { agentsView } from './agents';
import { createView } from './create';
import { jobView } from './job';
import { jobsView } from './jobs';
import { liveView } from './live';

const WRITERS = new Set(['writer', 'admin', 'anonymous']);
let me: Whoami | null = null;
let generation = 0;
let timers: number[] = [];

function stopTimers() {
  for (const timer of timers) clearTimeout(timer);
  timers = [];
}

function signIn(message?: string) {
  stopTimers();
  generation++;
  me = null;
  const error = h('div', { 'aria-live': 'assertive' }, message ? h('p', { class: 'problem', role: 'alert' }, message) : null);
  const form = h(
    'form',
    {
      class: 'signin',
      'aria-labelledby': 'signin-title',
      onsubmit: async (event: Event) => {
        event.preventDefault();
        const secret = String(new FormData(form).get('token') ?? '').trim();
        if (!secret) return;
        token.set(secret);
        try {
          me = await api.whoami();
        } catch (failure) {
          token.clear();
          replace(error, h('p', { class: 'problem', role: 'alert' }, failure instanceof ApiFailure ? `Sign-in refused: ${failure.message}` : String(failure)));
          return;
        }
        route();
      },
    },
    h('h1', { id: 'signin-title' }, 'Kairos console'),
    h('p', null, 'Sign in with an API token (reader, writer or admin). It is kept in this tab only and sent with every call.'),
    h('label', null, 'API token', h('input', { name: 'token', type: 'password', autocomplete: 'off', required: true })),
    h('button', { type: 'submit' }, 'Sign in'),
    error,
  );
  replace(document.body, h('main', { id: 'main' }, form));
}

function shell(current: string): HTMLElement {
  const canWrite = WRITERS.has(me!.role);
  const link = (href: string, label: string, key: string) => h('a', { href, 'aria-current': current === key ? 'page' : false }, label);
  const main = h('main', { id: 'main', tabindex: '-1' });
  replace(
    document.body,
    h(
      'header',
      { class: 'top' },
      h('span', { class: 'brand' }, 'Kairos'),
      h('nav', { 'aria-label': 'Views' }, link('#/jobs', 'Jobs', 'jobs'), link('#/agents', 'Agents', 'agents'), link('#/live', 'Live', 'live'), canWrite ? link('#/new', 'New job', 'new') : null),
      h(
        'span',
        { class: 'who' },
        h('span', { class: 'whoami' }, `${me!.tokenName ?? me!.tokenId ?? 'anonymous'} · ${me!.role} · namespace ${me!.namespace}`),
        h('button', { type: 'button', onclick: () => (token.clear(), signIn()) }, 'Sign out'),
      ),
    ),
    main,
  );
  return main;
}

async function route() {
  stopTimers();
  const mine = ++generation;
  if (!token.get()) return signIn();
  if (me === null) {
    try {
      me = await api.whoami();
    } catch (failure) {
      if (failure instanceof ApiFailure && failure.status === 401) token.clear();
      signIn(failure instanceof ApiFailure && failure.status === 401 ? `Signed out: ${failure.message}` : `Cannot reach the API: ${String(failure)}`);
      return;
    }
    if (mine !== generation) return;
  }
  const [path = '', query = ''] = location.hash.replace(/^#/, '').split('?');
  const params = new URLSearchParams(query);
  const parts = path.split('/').filter(Boolean);
  const key = parts[0] === 'jobs' && parts[1] ? 'job' : (parts[0] ?? 'jobs');
  const main = shell(key);
  const view: View = {
    me,
    canWrite: WRITERS.has(me.role),
    main,
    left: () => mine !== generation,
    every(ms, task) {
      const tick = async () => {
        await task();
        if (mine === generation) timers.push(window.setTimeout(() => void tick(), ms));
      };
      void tick();
    },
  };
  if (key === 'job') jobView(view, decodeURIComponent(parts[1]!));
  else if (key === 'agents') agentsView(view);
  else if (key === 'live') liveView(view);
  else if (key === 'new' && view.canWrite) createView(view);
  else jobsView(view, params);
}

whenUnauthenticated((message) => {
  // Before sign-in completes, the sign-in form says why itself.
  if (me === null) return;
  token.clear();
  signIn(`Signed out: ${message}`);
});
window.addEventListener('hashchange', () => void route());
void route();
