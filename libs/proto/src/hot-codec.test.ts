/**
 * The hand-written codecs against protobuf-es itself: the same bytes as
 * `toBinary`, the same messages as `fromBinary`, and a fall-back (undefined)
 * for everything they do not handle. Messages are filled through the
 * generated schemas' field lists, so a field added to agent.proto is filled
 * here too and fails these tests until hot-codec.ts writes and reads it.
 */
import { create, equals, fromBinary, toBinary, type DescField, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { ScalarType } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import {
  AgentMessageSchema,
  AssignmentSchema,
  CoordinatorMessageSchema,
  HeartbeatSchema,
  LeaseOutcomeSchema,
  OutcomeAckSchema,
  RenewReplySchema,
  type AgentMessage,
  type CoordinatorMessage,
} from './index';
import { decodeAgentMessage, decodeCoordinatorMessage, encodeAgentMessage, encodeCoordinatorMessage } from './hot-codec';

/** Deterministic pseudo-random numbers (mulberry32), so a failure reproduces. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const STRINGS = ['', 'a', '5f0c1a52-3a4e-4c1b-9d7e-2f7d1c9e8a10', '{"n":1,"s":"ünïcödé ✓ 🚀"}', 'x'.repeat(200), '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'];
const UINT32 = [0, 1, 127, 128, 300, 16_383, 16_384, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1];
const INT32 = [0, 1, -1, 127, -128, 2 ** 31 - 1, -(2 ** 31)];
const UINT64 = [0n, 1n, 127n, 128n, 2n ** 49n - 1n, 2n ** 49n, 2n ** 53n, 2n ** 63n, 2n ** 64n - 1n];
const INT64 = [0n, 1n, -1n, 1_764_547_200n, -62_135_596_800n, 2n ** 63n - 1n, -(2n ** 63n)];
const DOUBLES = [0, 1, -1, 1_764_547_200_123.5, Number.MAX_VALUE, Number.MIN_VALUE, -0.5];
/** The values above by scalar type: a type the hot messages gain without values here fails `filled()`. */
const SCALAR_VALUES: Partial<Record<ScalarType, readonly unknown[]>> = {
  [ScalarType.STRING]: STRINGS,
  [ScalarType.UINT32]: UINT32,
  [ScalarType.INT32]: INT32,
  [ScalarType.UINT64]: UINT64,
  [ScalarType.INT64]: INT64,
  [ScalarType.DOUBLE]: DOUBLES,
  [ScalarType.BOOL]: [false, true],
};

/** A value for one (non-list) field, from the value lists above; messages recursively. */
function valueFor(field: DescField, schema: DescMessage, random: () => number, sparse: boolean): unknown {
  const pick = <T>(values: readonly T[]): T => values[Math.floor(random() * values.length)]!;
  switch (field.fieldKind) {
    case 'scalar': {
      const values = SCALAR_VALUES[field.scalar];
      if (values === undefined) throw new Error(`filled(): no values for scalar type ${field.scalar} (${schema.typeName}.${field.name}); add them`);
      return pick(values);
    }
    case 'enum':
      // Known values, and an unknown one (proto3 enums are open).
      return pick([...field.enum.values.map((value) => value.number), 99]);
    case 'message':
      return filled(field.message, random, sparse);
    case 'list':
      if (field.listKind !== 'message') throw new Error(`filled(): no values for ${field.listKind} lists (${schema.typeName}.${field.name}); add them`);
      return Array.from({ length: Math.floor(random() * 4) }, () => filled(field.message, random, sparse));
    default:
      throw new Error(`filled(): unsupported field kind ${field.fieldKind} (${schema.typeName}.${field.name}); add it`);
  }
}

/**
 * A message of `schema` with every field set from the value lists above,
 * recursively; a oneof gets one of its members (or none), each as often.
 */
function filled<D extends DescMessage>(schema: D, random: () => number, sparse = false): MessageShape<D> {
  const message = create(schema) as Record<string, unknown>;
  for (const member of schema.members) {
    if (sparse && random() < 0.5) continue;
    if (member.kind === 'oneof') {
      const choice = Math.floor(random() * (member.fields.length + 1));
      const field = member.fields[choice];
      if (field !== undefined) message[member.localName] = { case: field.localName, value: valueFor(field, schema, random, sparse) };
      continue;
    }
    message[member.localName] = valueFor(member, schema, random, sparse);
  }
  return message as MessageShape<D>;
}

function coordinatorMessages(random: () => number): CoordinatorMessage[] {
  const list = <D extends DescMessage>(schema: D, sparse: boolean) =>
    Array.from({ length: 1 + Math.floor(random() * 20) }, () => filled(schema, random, sparse));
  return [
    create(CoordinatorMessageSchema, { kind: { case: 'assignments', value: { assignments: list(AssignmentSchema, false) } } }),
    create(CoordinatorMessageSchema, { kind: { case: 'assignments', value: { assignments: list(AssignmentSchema, true) } } }),
    create(CoordinatorMessageSchema, { kind: { case: 'outcomeAcks', value: { acks: list(OutcomeAckSchema, false) } } }),
    create(CoordinatorMessageSchema, { kind: { case: 'outcomeAcks', value: { acks: list(OutcomeAckSchema, true) } } }),
    create(CoordinatorMessageSchema, { kind: { case: 'renewReply', value: filled(RenewReplySchema, random, false) } }),
    create(CoordinatorMessageSchema, { kind: { case: 'renewReply', value: filled(RenewReplySchema, random, true) } }),
  ];
}

function agentMessages(random: () => number): AgentMessage[] {
  const list = (sparse: boolean) => Array.from({ length: 1 + Math.floor(random() * 20) }, () => filled(LeaseOutcomeSchema, random, sparse));
  return [
    create(AgentMessageSchema, { kind: { case: 'outcomes', value: { outcomes: list(false) } } }),
    create(AgentMessageSchema, { kind: { case: 'outcomes', value: { outcomes: list(true) } } }),
    create(AgentMessageSchema, { kind: { case: 'heartbeat', value: filled(HeartbeatSchema, random, false) } }),
    create(AgentMessageSchema, { kind: { case: 'heartbeat', value: filled(HeartbeatSchema, random, true) } }),
  ];
}

describe('hot codecs agree with protobuf-es', () => {
  it('CoordinatorMessage assignments, outcome acks and renew replies: same bytes, same messages, every field', () => {
    const random = prng(20261201);
    for (let round = 0; round < 200; round++) {
      for (const message of coordinatorMessages(random)) {
        const expected = toBinary(CoordinatorMessageSchema, message);
        const bytes = encodeCoordinatorMessage(message);
        expect(Buffer.from(bytes!)).toEqual(Buffer.from(expected));
        const decoded = decodeCoordinatorMessage(expected);
        const reference = fromBinary(CoordinatorMessageSchema, expected);
        expect(decoded).toBeDefined();
        expect(equals(CoordinatorMessageSchema, decoded!, reference)).toBe(true);
        expect(decoded).toEqual(reference);
      }
    }
  });

  it('AgentMessage outcomes and heartbeats: same bytes, same messages, every field', () => {
    const random = prng(7);
    for (let round = 0; round < 200; round++) {
      for (const message of agentMessages(random)) {
        const expected = toBinary(AgentMessageSchema, message);
        expect(Buffer.from(encodeAgentMessage(message)!)).toEqual(Buffer.from(expected));
        const decoded = decodeAgentMessage(expected);
        expect(decoded).toBeDefined();
        expect(decoded).toEqual(fromBinary(AgentMessageSchema, expected));
      }
    }
  });

  it('empty lists and empty items round-trip', () => {
    for (const message of [
      create(CoordinatorMessageSchema, { kind: { case: 'assignments', value: {} } }),
      create(CoordinatorMessageSchema, { kind: { case: 'outcomeAcks', value: { acks: [{}] } } }),
    ]) {
      const expected = toBinary(CoordinatorMessageSchema, message);
      expect(Buffer.from(encodeCoordinatorMessage(message)!)).toEqual(Buffer.from(expected));
      expect(decodeCoordinatorMessage(expected)).toEqual(fromBinary(CoordinatorMessageSchema, expected));
    }
    for (const message of [
      create(CoordinatorMessageSchema, { kind: { case: 'renewReply', value: {} } }),
      create(CoordinatorMessageSchema, { kind: { case: 'renewReply', value: { statuses: [{}, { state: { case: 'remainingMs', value: 0 } }] } } }),
      create(CoordinatorMessageSchema, { kind: { case: 'renewReply', value: { statuses: [{ state: { case: 'lost', value: {} } }] } } }),
    ]) {
      const expected = toBinary(CoordinatorMessageSchema, message);
      expect(Buffer.from(encodeCoordinatorMessage(message)!)).toEqual(Buffer.from(expected));
      expect(decodeCoordinatorMessage(expected)).toEqual(fromBinary(CoordinatorMessageSchema, expected));
    }
    for (const message of [
      create(AgentMessageSchema, { kind: { case: 'heartbeat', value: {} } }),
      create(AgentMessageSchema, { kind: { case: 'heartbeat', value: { leases: [{}] } } }),
    ]) {
      const expected = toBinary(AgentMessageSchema, message);
      expect(Buffer.from(encodeAgentMessage(message)!)).toEqual(Buffer.from(expected));
      expect(decodeAgentMessage(expected)).toEqual(fromBinary(AgentMessageSchema, expected));
    }
    const outcomes = create(AgentMessageSchema, { kind: { case: 'outcomes', value: { outcomes: [{}] } } });
    expect(decodeAgentMessage(toBinary(AgentMessageSchema, outcomes))).toEqual(outcomes);
  });
});

describe('hot codecs decline what they do not handle (the caller uses protobuf-es)', () => {
  const oneAssignment = create(CoordinatorMessageSchema, {
    kind: { case: 'assignments', value: { assignments: [{ jobId: 'j', leaseGeneration: 3n, task: 't' }] } },
  });

  /** The bytes of an Assignments envelope whose one Assignment has `extra` appended. */
  function withItemBytes(extra: (writer: BinaryWriter) => void): Uint8Array {
    const item = new BinaryWriter();
    item.tag(1, WireType.LengthDelimited).string('j');
    extra(item);
    const itemBytes = item.finish();
    const list = new BinaryWriter().tag(1, WireType.LengthDelimited).bytes(itemBytes).finish();
    return new BinaryWriter().tag(2, WireType.LengthDelimited).bytes(list).finish();
  }

  it('other message kinds', () => {
    expect(encodeCoordinatorMessage(create(CoordinatorMessageSchema, { kind: { case: 'drain', value: {} } }))).toBeUndefined();
    expect(encodeAgentMessage(create(AgentMessageSchema, { kind: { case: 'draining', value: {} } }))).toBeUndefined();
    const draining = toBinary(AgentMessageSchema, create(AgentMessageSchema, { kind: { case: 'draining', value: {} } }));
    expect(decodeAgentMessage(draining)).toBeUndefined();
    expect(decodeCoordinatorMessage(new Uint8Array())).toBeUndefined();
  });

  it('unknown fields, on decode (kept by fromBinary) and on encode', () => {
    const bytes = withItemBytes((writer) => writer.tag(99, WireType.Varint).uint32(5));
    expect(decodeCoordinatorMessage(bytes)).toBeUndefined();
    const reference = fromBinary(CoordinatorMessageSchema, bytes);
    expect(reference.kind.case === 'assignments' && reference.kind.value.assignments[0]!.$unknown).toHaveLength(1);
    // A message carrying them is left to toBinary, which writes them back.
    expect(encodeCoordinatorMessage(reference)).toBeUndefined();
  });

  it('a renew reply whose status sets its oneof twice, or whose remaining_ms is not a uint32', () => {
    const status = new BinaryWriter().tag(1, WireType.LengthDelimited).string('j').tag(3, WireType.Varint).uint32(5);
    const twice = status.tag(3, WireType.Varint).uint32(7).finish();
    const reply = new BinaryWriter().tag(2, WireType.LengthDelimited).bytes(twice).finish();
    const bytes = new BinaryWriter().tag(3, WireType.LengthDelimited).bytes(reply).finish();
    expect(decodeCoordinatorMessage(bytes)).toBeUndefined();
    const reference = fromBinary(CoordinatorMessageSchema, bytes);
    expect(reference.kind.case === 'renewReply' && reference.kind.value.statuses[0]!.state).toEqual({ case: 'remainingMs', value: 7 });
    for (const value of [-1, 2 ** 32, 1.5]) {
      const message = create(CoordinatorMessageSchema, { kind: { case: 'renewReply', value: { statuses: [{ state: { case: 'remainingMs', value } }] } } });
      expect(encodeCoordinatorMessage(message)).toBeUndefined();
    }
  });

  it('a wire type that does not match the field', () => {
    expect(decodeCoordinatorMessage(withItemBytes((writer) => writer.tag(5, WireType.LengthDelimited).string('one')))).toBeUndefined();
  });

  it('truncated input', () => {
    const bytes = toBinary(CoordinatorMessageSchema, oneAssignment);
    for (let length = 1; length < bytes.length; length++) expect(decodeCoordinatorMessage(bytes.subarray(0, length))).toBeUndefined();
  });

  it('the oneof field twice (protobuf merges; left to fromBinary)', () => {
    const bytes = toBinary(CoordinatorMessageSchema, oneAssignment);
    const twice = Buffer.concat([bytes, bytes]);
    expect(decodeCoordinatorMessage(twice)).toBeUndefined();
    const reference = fromBinary(CoordinatorMessageSchema, twice);
    expect(reference.kind.case === 'assignments' && reference.kind.value.assignments).toHaveLength(2);
  });

  it('a repeated timestamp merges like protobuf-es', () => {
    const ts1 = new BinaryWriter().tag(1, WireType.Varint).int64(5n).finish();
    const ts2 = new BinaryWriter().tag(2, WireType.Varint).int32(7).finish();
    const bytes = withItemBytes((writer) => writer.tag(10, WireType.LengthDelimited).bytes(ts1).tag(10, WireType.LengthDelimited).bytes(ts2));
    const decoded = decodeCoordinatorMessage(bytes);
    expect(decoded).toEqual(fromBinary(CoordinatorMessageSchema, bytes));
    expect(decoded!.kind.case === 'assignments' && decoded!.kind.value.assignments[0]!.scheduledFor).toMatchObject({ seconds: 5n, nanos: 7 });
  });
});
