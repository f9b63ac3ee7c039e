/**
 * Reading the coordinator's /metrics (Prometheus text format) in tests.
 */

/** A sample line's labels, or undefined when the line is not well formed. */
function parseLabels(text: string, start: number): { labels: Map<string, string>; end: number } | undefined {
  const labels = new Map<string, string>();
  let i = start;
  for (;;) {
    while (text[i] === ' ' || text[i] === ',') i++;
    if (text[i] === '}') return { labels, end: i + 1 };
    const equals = text.indexOf('=', i);
    if (equals < 0 || text[equals + 1] !== '"') return undefined;
    const key = text.slice(i, equals).trim();
    let value = '';
    for (i = equals + 2; i < text.length && text[i] !== '"'; i++) {
      if (text[i] === '\\') {
        i++;
        value += text[i] === 'n' ? '\n' : text[i];
      } else {
        value += text[i];
      }
    }
    if (i >= text.length) return undefined;
    labels.set(key, value);
    i++;
  }
}

function parseValue(token: string | undefined): number {
  if (token === '+Inf') return Infinity;
  if (token === '-Inf') return -Infinity;
  return Number(token);
}

/**
 * The sum of every sample of the metric family `name` (exactly that name, not a
 * longer one it prefixes) on the coordinator at `httpUrl` whose labels include
 * all of `labels` (in any order, others allowed); 0 when there is none.
 */
export async function metricValue(httpUrl: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${httpUrl}/metrics`)).text();
  const wanted = Object.entries(labels);
  let sum = 0;
  for (const line of text.split('\n')) {
    let present = new Map<string, string>();
    let rest: string;
    if (line.startsWith(`${name}{`)) {
      const parsed = parseLabels(line, name.length + 1);
      if (parsed === undefined) continue;
      present = parsed.labels;
      rest = line.slice(parsed.end);
    } else if (line.startsWith(`${name} `)) {
      rest = line.slice(name.length);
    } else {
      continue;
    }
    if (wanted.every(([key, value]) => present.get(key) === value)) sum += parseValue(rest.trim().split(/\s+/)[0]);
  }
  return sum;
}
