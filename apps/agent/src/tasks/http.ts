/**
 * Built-in `http` task: one HTTP request; 2xx is success, anything else a
 * failure naming the status.
 *
 * Payload: { url, method? = "POST", headers?, body?: string | JSON, timeoutMs? }
 *
 * Safety: the destination must be on the agent's allow-list (KAIROS_HTTP_ALLOW_HOSTS):
 * an entry "host" allows that host on any port, "host:port" only that port
 * (the scheme's default port when the URL has none). An empty list refuses
 * every URL. Redirects are not followed (a 3xx is a failure), so an allowed
 * host cannot bounce the agent to one that is not.
 *
 * Every request carries X-Kairos-Job-Id, X-Kairos-Run-Id, X-Kairos-Attempt and
 * X-Kairos-Fencing-Token (the lease generation), which payload headers cannot
 * override, so the receiver can de-duplicate and fence.
 */
import { httpPayload } from '@kairos/tasks';
import { parsePayload, type TaskContext, type TaskHandler } from '../sdk';

/** How much of an error response's body ends up in the failure message. */
const ERROR_BODY_CHARS = 512;

/** Whether `url`'s host (and port) is allowed by one of the entries. */
export function isHostAllowed(url: URL, allowHosts: readonly string[]): boolean {
  const host = url.hostname.toLowerCase();
  const port = url.port !== '' ? url.port : url.protocol === 'https:' ? '443' : '80';
  return allowHosts.some((raw) => {
    const entry = parseAllowEntry(raw);
    return entry !== undefined && entry.host === host && (entry.port === undefined || entry.port === port);
  });
}

/** "host", "host:port", "[v6]", "[v6]:port" or a bare IPv6 address, normalised like URL.hostname. */
function parseAllowEntry(raw: string): { host: string; port: string | undefined } | undefined {
  const entry = raw.trim().toLowerCase();
  if (entry === '') return undefined;
  const bracketed = /^(\[[^\]]+\])(?::(\d+))?$/.exec(entry);
  if (bracketed !== null) return { host: bracketed[1] as string, port: bracketed[2] };
  if ((entry.match(/:/g) ?? []).length > 1) return { host: `[${entry}]`, port: undefined };
  const [host, port] = entry.split(':');
  return { host: host as string, port };
}

export function httpTask(allowHosts: readonly string[]): TaskHandler {
  return async (payload: Record<string, unknown>, ctx: TaskContext): Promise<{ status: number }> => {
    const request = parsePayload(httpPayload, payload);
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      throw new Error(`invalid payload field "url": not an absolute URL: ${request.url}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new Error(`invalid payload field "url": only http and https are allowed, got ${url.protocol}`);
    }
    if (!isHostAllowed(url, allowHosts)) {
      throw new Error(`host "${url.host}" is not on this agent's HTTP allow-list (KAIROS_HTTP_ALLOW_HOSTS)`);
    }
    const headers = new Headers(request.headers);
    let body: string | undefined;
    if (typeof request.body === 'string') {
      body = request.body;
    } else if (request.body !== undefined) {
      body = JSON.stringify(request.body);
      if (!headers.has('content-type')) headers.set('content-type', 'application/json');
    }
    headers.set('x-kairos-job-id', ctx.jobId);
    headers.set('x-kairos-run-id', ctx.runId);
    headers.set('x-kairos-attempt', String(ctx.attempt));
    headers.set('x-kairos-fencing-token', String(ctx.fencingToken));
    if (ctx.traceparent !== undefined) headers.set('traceparent', ctx.traceparent);
    const signal = request.timeoutMs === undefined ? ctx.signal : AbortSignal.any([ctx.signal, AbortSignal.timeout(request.timeoutMs)]);
    let response: Response;
    try {
      response = await fetch(url, { method: request.method, headers, body: body ?? null, signal, redirect: 'manual' });
    } catch (error: unknown) {
      if (!ctx.signal.aborted && request.timeoutMs !== undefined && signal.aborted) {
        throw new Error(`${request.method} ${url.origin}${url.pathname}: no response within ${request.timeoutMs} ms`);
      }
      throw new Error(`${request.method} ${url.origin}${url.pathname} failed`, { cause: error });
    }
    if (response.status >= 200 && response.status < 300) {
      await response.body?.cancel();
      return { status: response.status };
    }
    if (response.status >= 300 && response.status < 400) {
      await response.body?.cancel();
      throw new Error(`HTTP ${response.status} from ${url.origin}: redirect to ${response.headers.get('location') ?? '?'} not followed`);
    }
    const snippet = await readSnippet(response);
    throw new Error(`HTTP ${response.status} ${response.statusText} from ${url.origin}${snippet === '' ? '' : `: ${snippet}`}`);
  };
}

/** The start of a response body, without reading an unbounded one to the end. */
async function readSnippet(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (reader === undefined) return '';
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (text.length < ERROR_BODY_CHARS) {
      const chunk = await reader.read();
      if (chunk.done) break;
      text += decoder.decode(chunk.value, { stream: true });
    }
  } catch {
    // The snippet is best effort.
  } finally {
    await reader.cancel().catch(() => {});
  }
  return text.slice(0, ERROR_BODY_CHARS).trim();
}
