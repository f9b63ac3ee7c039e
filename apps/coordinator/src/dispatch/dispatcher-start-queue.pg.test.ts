/**
 * A spike seen ahead is dealt out to the agents' start queues in chunks, one
 * per agent per claim round, least loaded first: agents of one key end with
 * shares within a chunk of each other. Claimed in one `claimBatch` per agent,
 * two agents used to get 1,244 and 756 of a 2,000-job spike (bench W2), and a
 * spike's tail is the busier agent's.
 */
import { insertDueJobs, waitFor } from '@kairos/testing';
import { fakeSession, dispatcherTestBed } from '../test-support/sessions';
import type { AgentSession } from './agent-session';
import { START_QUEUE_MIN_CHUNK } from './dispatcher';

describe('start-queue claims', () => {
  const bed = dispatcherTestBed();

  test('a spike due ahead is split evenly between two agents of one key', async () => {
    const capacity = 256;
    const spike = 2_000;
    const dispatcher = bed.dispatcher(bed.db.createStore(), { preDispatch: true });
    const sessions: AgentSession[] = ['agent-1', 'agent-2'].map((id) => fakeSession(id, ['noop'], [], capacity, 32 * capacity));
    for (const session of sessions) dispatcher.addSession(session);
    // Due within the look-ahead (2 s), all at one instant.
    await insertDueJobs(bed.db.pool, { count: spike, nextRunAt: new Date(Date.now() + 1_500) });
    dispatcher.start();
    const held = () => sessions.map((session) => session.held.size);
    await waitFor(() => held()[0]! + held()[1]! === spike, { description: `all ${spike} jobs assigned`, timeoutMs: 20_000 });
    const [a, b] = held();
    // Every job went to one agent or the other, each within a chunk of the even share.
    const chunk = Math.max(START_QUEUE_MIN_CHUNK, capacity / 2);
    expect(Math.abs(a! - b!)).toBeLessThanOrEqual(chunk);
    const { rows } = await bed.db.pool.query(`SELECT lease_owner, count(*)::int AS n FROM jobs WHERE state = 'CLAIMED' GROUP BY 1 ORDER BY 1`);
    expect(rows).toEqual([
      { lease_owner: 'agent-1', n: a },
      { lease_owner: 'agent-2', n: b },
    ]);
  });
});
