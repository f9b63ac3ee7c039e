/**
 * The reason the session runs in a worker thread: a custom handler that hogs
 * the main thread with CPU work must not stop heartbeats (or the renewals
 * that keep its own lease trusted). The agent runs from dist/ in a child
 * process, so the fake coordinator in this process stays responsive and
 * timestamps what arrives. The second case is the control: with the session
 * on the main thread the same handler starves the heartbeats, which shows the
 * measurement can tell the difference.
 */
import path from 'node:path';
import { HandlerResult } from '@kairos/proto';
import { assertFreshBuild, runNode, type ChildRun } from '../test-support/built-agent';
import { FakeCoordinator } from '../test-support/fake-coordinator';
import { waitFor } from '../test-support/wait-for';

const BUSY_MS = 700; // about three and a half heartbeat intervals of 200 ms
const SCRIPT = path.join(__dirname, '..', 'test-support', 'busy-agent.cjs');

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

beforeAll(() => assertFreshBuild());

async function runBusyJob(thread: 'worker' | 'inline') {
  const fake = await FakeCoordinator.start({ leaseMs: 600, heartbeatIntervalMs: 200 });
  cleanups.push(() => fake.stop());
  const agent: ChildRun = runNode([SCRIPT, thread, String(BUSY_MS)], { KAIROS_COORDINATOR: fake.address });
  cleanups.push(() => agent.kill());
  const context = () => `agent stderr:\n${agent.stderr()}`;
  const stream = await waitFor(`a heartbeat from the agent (${context()})`, () => (fake.streams[0]?.heartbeats().length ?? 0) >= 1 && fake.streams[0], {
    timeoutMs: 10_000,
  });
  const assignedAt = performance.now();
  stream.assign({ jobId: 'cpu', task: 'busy' });
  // Wait until heartbeats flow again after the busy loop, whatever happened to the lease.
  await waitFor('a heartbeat after the busy period', () => stream.heartbeatTimes().some((t) => t > assignedAt + BUSY_MS + 100), {
    timeoutMs: 10_000,
  });
  const times = stream.heartbeatTimes();
  const before = times.filter((t) => t <= assignedAt).at(-1) ?? assignedAt;
  const window = [before, ...times.filter((t) => t > assignedAt && t < assignedAt + BUSY_MS)];
  const after = times.find((t) => t >= assignedAt + BUSY_MS);
  if (after !== undefined) window.push(after);
  const gaps = window.slice(1).map((t, i) => t - (window[i] as number));
  return { stream, gaps, during: window.length - 1 - (after === undefined ? 0 : 1), context };
}

describe('renewal on a separate thread', () => {
  it('keeps heartbeating and keeps the lease while a handler blocks the main thread', async () => {
    const { stream, gaps, during, context } = await runBusyJob('worker');
    const outcome = await waitFor('the outcome', () => stream.outcomes().find((o) => o.jobId === 'cpu'), { timeoutMs: 5_000 });
    expect(outcome.result).toBe(HandlerResult.SUCCEEDED);
    // Heartbeats arrived while the handler spun, about every 200 ms (generous slack for a shared machine).
    expect(during).toBeGreaterThanOrEqual(2);
    const maxGap = Math.max(...gaps);
    if (maxGap >= 500) throw new Error(`heartbeat gap of ${Math.round(maxGap)} ms (gaps: ${gaps.map(Math.round).join(', ')}); ${context()}`);
    // They listed the busy lease, and it was renewed throughout.
    const busyBeats = stream.heartbeats().filter((h) => h.leases.some((l) => l.jobId === 'cpu'));
    expect(busyBeats.length).toBeGreaterThanOrEqual(2);
  });

  it('(control) starves heartbeats when the session shares the main thread', async () => {
    const { gaps } = await runBusyJob('inline');
    expect(Math.max(...gaps)).toBeGreaterThanOrEqual(BUSY_MS - 150);
  });
});
