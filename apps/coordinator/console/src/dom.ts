/**
 * A tiny element builder: `h('a', {href, class}, 'text', child)`. Attributes
 * that start with `on` and hold a function become event listeners; `false`,
 * `null` and `undefined` attributes and children are left out. No inline
 * styles anywhere (the Content-Security-Policy forbids them): classes only.
 */
export type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, unknown> | null;

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs, ...children: Child[]): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith('on') && typeof value === 'function') element.addEventListener(name.slice(2).toLowerCase(), value as EventListener);
    else if (name === 'value' && 'value' in element) (element as HTMLInputElement).value = String(value);
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  append(element, children);
  return element;
}

export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, child);
    else parent.appendChild(typeof child === 'string' || typeof child === 'number' ? document.createTextNode(String(child)) : child);
  }
}

/** Replaces the children of `parent`. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** An instant as the operator reads it: UTC, to the second. */
export function when(iso: string | null): string {
  if (iso === null) return '—';
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}Z`;
}

/** How long ago (or ahead) an instant is, in words: "12 s ago", "in 3 min". */
export function relative(iso: string | null, now = Date.now()): string {
  if (iso === null) return '';
  const ms = Date.parse(iso) - now;
  const words = duration(Math.abs(ms));
  return ms <= 0 ? `${words} ago` : `in ${words}`;
}

export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  if (s < 86_400) return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.round((s % 86_400) / 3600)} h`;
}

/** `<time>` with the UTC reading and, in its title, the relative one. */
export function time(iso: string | null): HTMLElement | string {
  if (iso === null) return '—';
  return h('time', { datetime: iso, title: relative(iso) }, when(iso));
}
