/**
 * A tiny JSON client for the coordinator's REST API, for tests and tools: it
 * returns status and body instead of throwing, so tests can assert on both.
 */
export interface RestResponse<T = any> {
  status: number;
  body: T;
}

/** `token`: sent as `authorization: Bearer <token>`. */
export function restClient(baseUrl: string, token?: string) {
  async function call<T>(method: string, path: string, body?: unknown): Promise<RestResponse<T>> {
    const response = await fetch(`${baseUrl}${path}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text.length > 0 ? (JSON.parse(text) as T) : (undefined as T) };
  }
  return {
    call,
    createJob: (body: Record<string, unknown>) => call<any>('POST', '/jobs', body),
    getJob: (id: string) => call<any>('GET', `/jobs/${id}`),
    listJobs: (query = '') => call<any>('GET', `/jobs${query}`),
    cancelJob: (id: string) => call<any>('DELETE', `/jobs/${id}`),
    /** One page of a job's runs: `{runs, nextCursor}`. */
    runs: (id: string, query = '') => call<{ runs: any[]; nextCursor: string | null; error?: any }>('GET', `/jobs/${id}/runs${query}`),
    agents: () => call<any[]>('GET', '/agents'),
    control: (id: string, verb: 'pause' | 'resume' | 'trigger') => call<any>('POST', `/jobs/${id}/${verb}`),
  };
}
