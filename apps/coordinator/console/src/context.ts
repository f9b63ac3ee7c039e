import type { Whoami } from './api';
import { ApiFailure } from './api';
import { h } from './dom';

/** What every view gets: the caller, the page's main region and a refresh timer that stops when the view changes. */
export interface View {
  me: Whoami;
  canWrite: boolean;
  main: HTMLElement;
  /** Runs `task` now and every `ms` until the operator leaves the view. */
  every(ms: number, task: () => Promise<void>): void;
  /** True once the operator has left this view (late answers are dropped). */
  left(): boolean;
}

/** A message in words for a failed call, in an element that screen readers announce. */
export function problem(error: unknown): HTMLElement {
  const text = error instanceof ApiFailure ? `${error.message}${error.field ? ` (field ${error.field})` : ''} — HTTP ${error.status} ${error.reason}` : String(error);
  return h('p', { class: 'problem', role: 'alert' }, text);
}

export const STATES = ['DUE', 'CLAIMED', 'PAUSED', 'DEAD', 'COMPLETED', 'CANCELLED'] as const;

export function badge(value: string): HTMLElement {
  return h('span', { class: `badge badge-${value.toLowerCase().replace(/_/g, '-')}` }, value);
}
