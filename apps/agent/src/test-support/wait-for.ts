/**
 * Waiting helpers for tests: poll a condition or a recorded event until it
 * holds, instead of sleeping. (libs/testing has a waitFor too, but importing
 * it would pull in the database harness, which agents must never touch.)
 */
import type { AgentEventMap, AgentEventName, AgentEvents } from '../runtime/events';

export interface WaitOptions {
  readonly timeoutMs?: number;
  readonly intervalMs?: number;
}

/** Resolves with the first truthy value of `probe`; rejects naming `what` after the timeout. */
export async function waitFor<T>(what: string, probe: () => T | undefined | null | false, options: WaitOptions = {}): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const intervalMs = options.intervalMs ?? 5;
  const started = Date.now();
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export interface RecordedEvent<K extends AgentEventName = AgentEventName> {
  readonly name: K;
  readonly info: AgentEventMap[K][0];
  readonly at: number;
}

/** Records every event of an agent from the moment it is attached, so no event can be missed. */
export class EventLog {
  readonly events: RecordedEvent[] = [];

  constructor(emitter: AgentEvents) {
    const names: AgentEventName[] = [
      'connected',
      'disconnected',
      'assigned',
      'started',
      'finished',
      'lease-lost',
      'abort-requested',
      'outcome-acked',
      'released',
      'drained',
      'failed',
    ];
    for (const name of names) {
      emitter.on(name, (info: unknown) => {
        this.events.push({ name, info, at: performance.now() } as RecordedEvent);
      });
    }
  }

  all<K extends AgentEventName>(name: K, predicate: (info: AgentEventMap[K][0]) => boolean = () => true): AgentEventMap[K][0][] {
    return this.events.filter((event) => event.name === name).map((event) => event.info as AgentEventMap[K][0]).filter(predicate);
  }

  find<K extends AgentEventName>(name: K, predicate?: (info: AgentEventMap[K][0]) => boolean): AgentEventMap[K][0] | undefined {
    return this.all(name, predicate)[0];
  }

  /** Waits until an event of that name (matching `predicate`) has been recorded. */
  wait<K extends AgentEventName>(name: K, predicate?: (info: AgentEventMap[K][0]) => boolean, options?: WaitOptions): Promise<AgentEventMap[K][0]> {
    return waitFor(`event "${name}"`, () => this.find(name, predicate), options);
  }

  /** Waits for a run's `finished` event. */
  finished(jobId: string, options?: WaitOptions): Promise<AgentEventMap['finished'][0]> {
    return this.wait('finished', (info) => info.jobId === jobId, options);
  }
}
