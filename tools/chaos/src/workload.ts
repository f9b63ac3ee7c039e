/**
 * The workload and its clients: recurring and one-off `http` jobs against the
 * receiver, and a client that creates, pauses, resumes, cancels and reads at
 * 5-10 requests per second through the live coordinators' REST APIs.
 *
 * Every answer that matters to the checker is logged: 201s (and 200 replays of
 * an idempotent create), 204 cancels with their send and answer times, and
 * pause windows. A request whose answer is unknown (connection refused, reset,
 * timeout, 5xx) is retried with the same intent until an answer is definite:
 * creates carry an idempotency key; a pause or cancel that may have landed is
 * treated as landed until proven otherwise.
 */
import { nextOccurrence, parseCron, type CronSchedule } from '@kairos/schedule';
import type { ClientLog } from './history';
import type { Rng } from './rng';

export interface JobSpec {
  kind: 'recurring' | 'one-off';
  /** Handler duration at the receiver. */
  ms: number;
  schedule?: string;
  runAt?: number;
  misfirePolicy: 'fire-once' | 'skip';
}

interface TrackedJob {
  id: string;
  spec: JobSpec;
  cron: CronSchedule | null;
  status: 'active' | 'paused' | 'cancelled';
  /** Open pause window in the client log (index), while paused. */
  pauseIndex?: number;
  resumeAt?: number;
}

export interface WorkloadOptions {
  rng: Rng;
  seed: number;
  receiverUrl: string;
  recurring: number;
  oneOff: number;
  /** How long the client runs (the fault phase); one-offs are spread over it. */
  sessionMs: number;
  coordinators: () => string[];
  log: (message: string, fields?: Record<string, unknown>) => void;
}

const INTERVALS_S = [5, 6, 10, 12, 15, 20, 30];
export const MAX_HANDLER_MS = 12_000;
const MAX_IN_FLIGHT = 6;
const REQUEST_TIMEOUT_MS = 8_000;

/** Handler durations: 60% 0.1-0.5 s, 30% 1-4 s, 10% 5-12 s (longer than the lease). */
export function handlerMs(rng: Rng): number {
  const r = rng.next();
  if (r < 0.6) return Math.round(rng.between(100, 500));
  if (r < 0.9) return Math.round(rng.between(1_000, 4_000));
  return Math.round(rng.between(5_000, MAX_HANDLER_MS));
}

export class Workload {
  readonly log: ClientLog = { created: [], cancelled: [], pauses: [], requests: {} };
  private readonly jobs = new Map<string, TrackedJob>();
  private readonly pendingCreates: Array<{ key: string; spec: JobSpec }> = [];
  private readonly pendingCancels = new Map<string, number>();
  private createCounter = 0;
  private oneOffsCreated = 0;
  private inFlight = 0;
  private running = false;
  private loop: Promise<void> | undefined;
  private startedAt = 0;
  private rate = 7.5;
  private roundRobin = 0;

  constructor(private readonly options: WorkloadOptions) {}

  get jobCount(): number {
    return this.jobs.size;
  }

  recurringSpec(): JobSpec {
    const rng = this.options.rng;
    const interval = rng.pick(INTERVALS_S);
    const offset = rng.int(0, interval - 1);
    return {
      kind: 'recurring',
      ms: handlerMs(rng),
      schedule: `${offset}/${interval} * * * * *`,
      misfirePolicy: rng.chance(0.8) ? 'fire-once' : 'skip',
    };
  }

  oneOffSpec(): JobSpec {
    const rng = this.options.rng;
    return { kind: 'one-off', ms: handlerMs(rng), runAt: Date.now() + Math.round(rng.between(1_000, 20_000)), misfirePolicy: 'fire-once' };
  }

  /** Creates the recurring jobs before the fault clock starts (8 requests at a time). */
  async createInitial(): Promise<void> {
    const specs = Array.from({ length: this.options.recurring }, () => this.recurringSpec());
    const queue = specs.map((spec) => ({ key: this.nextKey(), spec }));
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let item = queue.shift(); item; item = queue.shift()) {
          for (let tries = 0; !(await this.create(item.key, item.spec)); tries++) {
            if (tries > 20) throw new Error('could not create the initial jobs');
            await sleep(250);
          }
        }
      }),
    );
  }

  start(): void {
    this.running = true;
    this.startedAt = Date.now();
    this.loop = this.run();
  }

  /** Stops issuing new requests and waits for the ones in flight. */
  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
    while (this.inFlight > 0) await sleep(20);
  }

  /** After the faults: every paused job resumed, every open intent settled. */
  async settle(deadlineMs = 30_000): Promise<void> {
    const deadline = Date.now() + deadlineMs;
    for (;;) {
      const paused = [...this.jobs.values()].filter((job) => job.status === 'paused');
      if (paused.length === 0 && this.pendingCancels.size === 0 && this.pendingCreates.length === 0) return;
      if (Date.now() > deadline) {
        this.options.log('client could not settle every intent', { paused: paused.length, cancels: this.pendingCancels.size, creates: this.pendingCreates.length });
        return;
      }
      await Promise.all([
        ...paused.map((job) => this.resume(job)),
        ...[...this.pendingCancels.keys()].map((id) => this.cancel(id)),
        ...this.pendingCreates.splice(0).map(async (item) => {
          if (!(await this.create(item.key, item.spec))) this.pendingCreates.push(item);
        }),
      ]);
      await sleep(200);
    }
  }

  /** Jobs whose next run is expected within [fromMs, toMs] from now (for cancel storms). */
  jobsAboutToRun(fromMs: number, toMs: number): string[] {
    const now = Date.now();
    const out: string[] = [];
    for (const job of this.jobs.values()) {
      if (job.status !== 'active') continue;
      let next: number | undefined;
      if (job.cron) next = nextOccurrence(job.cron, new Date(now))?.getTime();
      else next = job.spec.runAt;
      if (next !== undefined && next - now >= fromMs && next - now <= toMs) out.push(job.id);
    }
    return out;
  }

  // ---------------------------------------------------------------------------

  private async run(): Promise<void> {
    const rng = this.options.rng;
    let nextRateChange = 0;
    while (this.running) {
      const now = Date.now();
      if (now >= nextRateChange) {
        this.rate = rng.between(5, 10);
        nextRateChange = now + 10_000;
      }
      if (this.inFlight < MAX_IN_FLIGHT) {
        this.inFlight++;
        void this.oneRequest()
          .catch((error: unknown) => this.options.log('client request crashed', { error: String(error) }))
          .finally(() => this.inFlight--);
      } else {
        this.count('skipped (too many in flight)');
      }
      await sleep(1000 / this.rate);
    }
  }

  /** One client request, chosen by what is owed first and then by the seed. */
  private async oneRequest(): Promise<void> {
    const rng = this.options.rng;
    const now = Date.now();
    const create = this.pendingCreates.shift();
    if (create) {
      if (!(await this.create(create.key, create.spec))) this.pendingCreates.push(create);
      return;
    }
    const cancel = this.pendingCancels.keys().next();
    if (!cancel.done && rng.chance(0.5)) return void (await this.cancel(cancel.value));
    const due = [...this.jobs.values()].find((job) => job.status === 'paused' && (job.resumeAt ?? 0) <= now);
    if (due) return this.resume(due);
    const elapsed = (now - this.startedAt) / this.options.sessionMs;
    if (this.oneOffsCreated < Math.min(this.options.oneOff, Math.ceil(elapsed * this.options.oneOff) + 1)) {
      this.oneOffsCreated++;
      const spec = this.oneOffSpec();
      const key = this.nextKey();
      if (!(await this.create(key, spec))) this.pendingCreates.push({ key, spec });
      return;
    }
    const r = rng.next();
    const active = [...this.jobs.values()].filter((job) => job.status === 'active');
    if (active.length === 0) return;
    if (r < 0.45) {
      const recurring = active.filter((j) => j.spec.kind === 'recurring');
      return this.pause(rng.pick(recurring.length > 0 ? recurring : active), rng.between(2_000, 8_000));
    }
    if (r < 0.6) {
      const soon = this.jobsAboutToRun(0, 2_000);
      const target = soon.length > 0 && rng.chance(0.7) ? rng.pick(soon) : rng.pick(active).id;
      return void (await this.cancel(target));
    }
    const job = rng.pick([...this.jobs.values()]);
    const answer = await this.call('GET', `/jobs/${job.id}`);
    this.count(`GET ${answer.status}`);
  }

  async create(key: string, spec: JobSpec): Promise<boolean> {
    const body: Record<string, unknown> = {
      task: 'http',
      payload: { url: `${this.options.receiverUrl}/work?ms=${spec.ms}` },
      maxAttempts: 5,
      idempotencyKey: key,
      name: `chaos ${spec.kind} ${spec.ms}ms`,
    };
    if (spec.kind === 'recurring') {
      body.schedule = spec.schedule;
      body.misfirePolicy = spec.misfirePolicy;
    } else {
      body.runAt = new Date(spec.runAt!).toISOString();
    }
    const answer = await this.call('POST', '/jobs', body);
    this.count(`POST ${answer.status}`);
    if (answer.status === 201 || answer.status === 200) {
      const id = String((answer.body as { jobId?: string }).jobId);
      this.log.created.push({ jobId: id, at: Date.now() });
      if (!this.jobs.has(id)) {
        this.jobs.set(id, { id, spec, cron: spec.schedule ? parseCron(spec.schedule) : null, status: 'active' });
      }
      return true;
    }
    if (answer.status >= 400 && answer.status < 500) {
      this.options.log('create refused', { status: answer.status, body: answer.body });
      return true; // definite: not created
    }
    return false;
  }

  private async pause(job: TrackedJob, forMs: number): Promise<void> {
    const sentAt = Date.now();
    job.status = 'paused';
    const index = this.log.pauses.push({ jobId: job.id, from: sentAt, to: null }) - 1;
    job.pauseIndex = index;
    job.resumeAt = sentAt + forMs;
    const answer = await this.call('POST', `/jobs/${job.id}/pause`);
    this.count(`pause ${answer.status}`);
    if (answer.status === 409 || answer.status === 404) {
      // Not paused (running, or finished): no window after all.
      this.log.pauses.splice(index, 1, { jobId: job.id, from: sentAt, to: sentAt });
      job.status = answer.status === 404 ? 'cancelled' : 'active';
      job.pauseIndex = undefined;
      return;
    }
    // 200, or unknown: treat as paused; the resume (a no-op if it never landed) closes the window.
  }

  private async resume(job: TrackedJob): Promise<void> {
    if (job.status !== 'paused') return;
    const answer = await this.call('POST', `/jobs/${job.id}/resume`);
    this.count(`resume ${answer.status}`);
    if (answer.status === 200 || answer.status === 409 || answer.status === 404) {
      if (job.pauseIndex !== undefined) this.log.pauses[job.pauseIndex]!.to = Date.now();
      job.pauseIndex = undefined;
      job.status = answer.status === 200 ? 'active' : 'cancelled';
    } else {
      job.resumeAt = Date.now() + 500;
    }
  }

  /** DELETE until a definite answer; a 204 is logged with the first send time of this intent. */
  async cancel(jobId: string): Promise<number> {
    const firstSent = this.pendingCancels.get(jobId) ?? Date.now();
    this.pendingCancels.delete(jobId);
    const answer = await this.call('DELETE', `/jobs/${jobId}`);
    this.count(`DELETE ${answer.status}`);
    const job = this.jobs.get(jobId);
    if (answer.status === 204) {
      this.log.cancelled.push({ jobId, sentAt: firstSent, answeredAt: Date.now() });
      if (job) {
        if (job.pauseIndex !== undefined) this.log.pauses[job.pauseIndex]!.to = Date.now();
        job.pauseIndex = undefined;
        if (job.status !== 'cancelled' && job.spec.kind === 'recurring' && this.running) {
          // Keep the recurring population steady: a replacement.
          this.pendingCreates.push({ key: this.nextKey(), spec: this.recurringSpec() });
        }
        job.status = 'cancelled';
      }
    } else if (answer.status === 0 || answer.status >= 500) {
      this.pendingCancels.set(jobId, firstSent);
    }
    return answer.status;
  }

  private nextKey(): string {
    return `chaos-${this.options.seed}-${++this.createCounter}`;
  }

  private count(what: string): void {
    this.log.requests[what] = (this.log.requests[what] ?? 0) + 1;
  }

  /** One REST call to the next live coordinator; status 0 when no answer came. */
  async call(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }> {
    const urls = this.options.coordinators();
    if (urls.length === 0) return { status: 0, body: 'no coordinator' };
    const base = urls[this.roundRobin++ % urls.length]!;
    try {
      const response = await fetch(`${base}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const text = await response.text();
      let parsed: unknown = text;
      try {
        parsed = text.length > 0 ? JSON.parse(text) : undefined;
      } catch {
        // keep the text
      }
      return { status: response.status, body: parsed };
    } catch (error: unknown) {
      return { status: 0, body: String(error) };
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
