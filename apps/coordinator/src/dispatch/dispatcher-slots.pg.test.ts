/**
 * Hello.slots_free_on_outcome: a lease whose Outcome has arrived no longer
 * takes a slot, so the claim that fills the slot runs beside the completion's
 * write instead of after it. Here the completion's statement is held open on
 * purpose (the real store; its call is only delayed) so the order is certain.
 */
import { insertJob, waitFor } from '@kairos/testing';
import { fakeSession, dispatcherTestBed, gatedLease } from '../test-support/sessions';
import { freeSlots, type CoordinatorMessageInit } from './agent-session';

/** The job ids assigned so far, in order. */
function assigned(sent: readonly CoordinatorMessageInit[]): string[] {
  return sent.flatMap((message) => (message.kind?.case === 'assignments' ? (message.kind.value.assignments ?? []).map((a) => a.jobId!) : []));
}

describe('a slot freed by an outcome that is still being recorded', () => {
  const bed = dispatcherTestBed();

  /** An agent of capacity 1 and two due jobs; the first is assigned, its outcome reported, its completion held open. */
  async function completionHeldOpen(agentId: string, slotsFreeOnOutcome: boolean) {
    const gated = gatedLease(bed.db.createStore(), 'complete');
    const dispatcher = bed.dispatcher(gated.store);
    const sent: CoordinatorMessageInit[] = [];
    const session = fakeSession(agentId, [agentId], sent, 1, 0, { slotsFreeOnOutcome });
    dispatcher.addSession(session);
    const first = await insertJob(bed.db.pool, { task: agentId, runAt: new Date(Date.now() - 2_000) });
    const second = await insertJob(bed.db.pool, { task: agentId, runAt: new Date(Date.now() - 1_000) });
    dispatcher.start();
    await waitFor(() => assigned(sent).length === 1 || undefined, { description: 'the first job assigned' });
    expect(assigned(sent)).toEqual([first]);
    const [lease] = [...session.held.values()];
    const completing = dispatcher.complete(session, [{ jobId: lease!.jobId, leaseGeneration: lease!.leaseGeneration, outcome: 'SUCCEEDED' }]);
    await waitFor(() => gated.reached(), { description: 'the completion statement under way' });
    return { sent, session, first, second, completing, openGate: gated.open };
  }

  test('an agent that announced it is assigned its next job while the completion is written', async () => {
    const { sent, session, first, second, completing, openGate } = await completionHeldOpen('slots-free', true);
    await waitFor(() => assigned(sent).length === 2 || undefined, { description: 'the second job assigned before the first is recorded' });
    expect(assigned(sent)).toEqual([first, second]);
    // Two leases held (one finished, one new), one slot taken.
    expect(session.held.size).toBe(2);
    expect(freeSlots(session)).toBe(0);

    openGate();
    expect(await completing).toEqual([expect.objectContaining({ kind: 'recorded', jobId: first })]);
    expect(session.held.size).toBe(1);
    expect(session.reported.size).toBe(0);
    const { rows } = await bed.db.pool.query('SELECT id, state FROM jobs WHERE id = ANY($1::uuid[]) ORDER BY state', [[first, second]]);
    expect(rows).toEqual([
      { id: second, state: 'CLAIMED' },
      { id: first, state: 'COMPLETED' },
    ]);
  });

  test('an agent that did not announce it keeps the slot until the outcome is recorded', async () => {
    const { sent, session, first, second, completing, openGate } = await completionHeldOpen('slots-held', false);
    expect(freeSlots(session)).toBe(0);
    expect(session.reported.size).toBe(0);
    expect(assigned(sent)).toEqual([first]);

    openGate();
    await completing;
    await waitFor(() => assigned(sent).length === 2 || undefined, { description: 'the second job assigned once the first is recorded' });
    expect(assigned(sent)).toEqual([first, second]);
  });
});
