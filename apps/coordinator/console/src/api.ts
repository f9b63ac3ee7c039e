/**
 * The REST API (docs/api.md), same origin. The token lives in sessionStorage
 * (gone when the tab closes) and goes with every call as a bearer token.
 */
const TOKEN_KEY = 'kairos.token';

export type Role = 'reader' | 'writer' | 'admin' | 'agent' | 'anonymous';
export interface Whoami {
  namespace: string;
  role: Role;
  tokenName: string | null;
  tokenId: string | null;
}
export interface Job {
  jobId: string;
  namespace: string;
  name: string | null;
  task: string;
  schedule: string | null;
  runAt: string | null;
  timezone: string;
  payload: Record<string, unknown>;
  state: 'DUE' | 'CLAIMED' | 'COMPLETED' | 'DEAD' | 'PAUSED' | 'CANCELLED';
  nextRunAt: string | null;
  occurrenceAt: string | null;
  attempt: number;
  maxAttempts: number;
  timeoutSeconds: number | null;
  misfirePolicy: string;
  overlapPolicy: string;
  idempotencyKey: string | null;
  leaseGeneration: number;
  leaseOwner: string | null;
  abort: { requestedAt: string; requestedBy: string | null; stopSchedule: boolean } | null;
  retry: { initialIntervalMs: number; maxIntervalMs: number; multiplier: number; jitter: number };
  jitterMs: number;
  pauseOnFailure: boolean;
  pausedReason: string | null;
  catchupWindowMs: number | null;
  backfill: { through: string | null; resumeAt: string } | null;
  version: number;
  createdAt: string;
  updatedAt: string;
}
export interface Run {
  runId: string;
  attempt: number;
  leaseGeneration: number | null;
  scheduledFor: string;
  startedAt: string | null;
  finishedAt: string | null;
  outcome: 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'LEASE_EXPIRED' | 'CANCELLED' | 'SKIPPED';
  workerId: string | null;
  error: string | null;
  abortedBy: string | null;
  reason: string | null;
}
export interface Occurrence {
  at: string;
  local: string;
  offset: string;
  dst: 'gap-shifted' | 'repeated-first' | 'repeated-elapsed' | null;
  scheduledLocal: string | null;
}
export interface Agent {
  agentId: string;
  namespace: string;
  tasks: string[];
  capacity: number;
  inFlight: number;
  connectedAt: string;
  lastHeartbeatAt: string | null;
  draining: boolean;
  quarantinedUntil: string | null;
  probation: boolean;
  version: string;
  coordinatorId: string;
}

/** A refusal of the API, with its documented error body. */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly reason: string,
    message: string,
    readonly field: string | undefined,
    readonly details: Record<string, unknown> | undefined,
  ) {
    super(message);
  }
}

export const token = {
  get: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (value: string) => sessionStorage.setItem(TOKEN_KEY, value),
  clear: () => sessionStorage.removeItem(TOKEN_KEY),
};

/** Called when the API says the token is not (or no longer) valid. */
let onUnauthenticated: (message: string) => void = () => undefined;
export function whenUnauthenticated(handler: (message: string) => void): void {
  onUnauthenticated = handler;
}

export async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const secret = token.get();
  if (secret) headers['authorization'] = `Bearer ${secret}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(path, { method, headers, body: body === undefined ? null : JSON.stringify(body), cache: 'no-store' });
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  const parsed = text === '' ? undefined : (JSON.parse(text) as unknown);
  if (response.ok) return parsed as T;
  const error = (parsed as { error?: { code?: string; reason?: string; message?: string; field?: string; details?: Record<string, unknown> } } | undefined)?.error ?? {};
  const failure = new ApiFailure(response.status, error.code ?? 'unknown', error.reason ?? 'UNKNOWN', error.message ?? `HTTP ${response.status}`, error.field, error.details);
  if (response.status === 401) onUnauthenticated(failure.message);
  throw failure;
}

export const api = {
  whoami: () => call<Whoami>('GET', '/whoami'),
  jobs: (query: URLSearchParams) => call<{ jobs: Job[]; nextCursor: string | null }>('GET', `/jobs?${query}`),
  job: (id: string) => call<Job>('GET', `/jobs/${encodeURIComponent(id)}`),
  runs: (id: string, cursor: string | null) =>
    call<{ runs: Run[]; nextCursor: string | null }>('GET', `/jobs/${encodeURIComponent(id)}/runs?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`),
  upcoming: (id: string) => call<{ schedule: string | null; timezone: string; occurrences: Occurrence[] }>('GET', `/jobs/${encodeURIComponent(id)}/upcoming?count=5`),
  agents: () => call<Agent[]>('GET', '/agents'),
  create: (body: Record<string, unknown>) => call<{ jobId: string }>('POST', '/jobs', body),
  cancel: (id: string) => call<void>('DELETE', `/jobs/${encodeURIComponent(id)}`),
  abort: (id: string) => call<{ runId: string | null; agentId: string | null; leaseGeneration: number }>('POST', `/jobs/${encodeURIComponent(id)}/abort`),
  verb: (id: string, verb: 'pause' | 'resume' | 'trigger') => call<Job>('POST', `/jobs/${encodeURIComponent(id)}/${verb}`),
  metrics: async (): Promise<string> => {
    const response = await fetch('/metrics', { cache: 'no-store' });
    if (!response.ok) throw new ApiFailure(response.status, 'unavailable', 'UNAVAILABLE', `GET /metrics answered ${response.status}`, undefined, undefined);
    return response.text();
  },
};
