/**
 * The complete-message builders: the same message protobuf-es would build, and
 * taken as they are by `create` (the reason they exist).
 */
import { create, equals, toBinary } from '@bufbuild/protobuf';
import { TimestampSchema, timestampFromMs } from '@bufbuild/protobuf/wkt';
import { AgentMessageSchema, HandlerResult, LeaseOutcomeSchema, type LeaseOutcome } from './index';
import { timestampMessage } from './complete';

describe('timestampMessage', () => {
  it.each([0, 1, 999, 1_000, 1_796_191_290_327, -1, -1_001, 1_500.5])('is timestampFromMs(%p), field for field and byte for byte', (ms) => {
    const ours = timestampMessage(ms);
    const theirs = timestampFromMs(ms);
    expect(ours).toEqual(theirs);
    expect(equals(TimestampSchema, ours, theirs)).toBe(true);
    expect(toBinary(TimestampSchema, ours)).toEqual(toBinary(TimestampSchema, theirs));
  });
});

describe('complete messages', () => {
  it('are taken as they are by create, nested in the envelope the agent stream sends', () => {
    const outcome: LeaseOutcome = {
      $typeName: 'kairos.v1.LeaseOutcome',
      jobId: '0190a3b4-5c6d-7e8f-9a0b-1c2d3e4f5a6b',
      leaseGeneration: 3n,
      result: HandlerResult.SUCCEEDED,
      error: '',
      finishedAt: timestampMessage(1_796_191_290_327),
      traceparent: '',
    };
    const message = create(AgentMessageSchema, { kind: { case: 'outcomes', value: { outcomes: [outcome] } } });
    expect(message.kind.case === 'outcomes' && message.kind.value.outcomes[0]).toBe(outcome);
    expect(equals(LeaseOutcomeSchema, outcome, create(LeaseOutcomeSchema, { ...outcome, finishedAt: timestampFromMs(1_796_191_290_327) }))).toBe(true);
  });
});
