/**
 * Hand-written binary codecs for the agent stream's per-job messages:
 * `CoordinatorMessage` carrying `Assignments`, `OutcomeAcks` or a
 * `RenewReply`, and `AgentMessage` carrying `Outcomes` or a `Heartbeat`.
 * Everything else, and anything these do not recognise, goes through
 * protobuf-es's `toBinary` / `fromBinary`.
 *
 * Why: protobuf-es v2 encodes by reflection over the descriptor. At thousands
 * of jobs a second that was the largest single cost in the coordinator's CPU
 * profile (an Assignment took about 4 µs to encode and 2.4 µs to decode, the
 * whole job about 75-100 µs across every process). Assignments, acks and
 * outcomes are sent once per job; a heartbeat and its reply list every lease
 * the agent holds, which is thousands while a spike waits in the start queue
 * (a heartbeat per lease/3 of 5,000 pre-dispatched leases each way). Written
 * out for their fields, with the sizes computed first and one buffer written
 * once, an Assignment encodes in about 0.5 µs
 * (docs/decisions/0022-hot-codec.md has the measurements).
 *
 * Contract, enforced by hot-codec.test.ts for every field of each schema:
 *
 * - the bytes are exactly what `toBinary` writes (same field order, proto3
 *   implicit presence: default values are not written; a oneof member is
 *   written whenever it is the set case, 0 included);
 * - decoding yields a message `equals` to `fromBinary`'s, with the same
 *   `$typeName`s and defaults;
 * - anything unexpected returns `undefined` and the caller uses protobuf-es:
 *   unknown fields (kept by `fromBinary` as `$unknown`), a repeated oneof
 *   field, a wire type that does not match, truncated input, a number out of
 *   range. So a peer running a newer schema loses nothing, and a malformed
 *   message fails exactly as it did.
 *
 * A field added to one of these messages in agent.proto makes the test fail
 * until it is added here: the test fills every field the generated schema has.
 */
import type { DescMessage } from '@bufbuild/protobuf';
import type { Timestamp } from '@bufbuild/protobuf/wkt';
import {
  AgentMessageSchema,
  CoordinatorMessageSchema,
  type AgentMessage,
  type Assignment,
  type CoordinatorMessage,
  type Heartbeat,
  type LeaseLost,
  type LeaseOutcome,
  type LeaseRef,
  type LeaseStatus,
  type OutcomeAck,
  type RenewReply,
} from './gen/kairos/v1/agent_pb';

/** Thrown inside the decoders when the input is not one they handle; never escapes this module. */
const NOT_HOT = Symbol('kairos.not-hot');

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

// Wire types.
const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;

/** A one-byte tag (every field number here is below 16). */
const tag = (field: number, wireType: number): number => (field << 3) | wireType;

function varintSize(value: number): number {
  let size = 1;
  while (value >= 128) {
    value = Math.floor(value / 128);
    size++;
  }
  return size;
}

/** Size of a uint64/int64 varint (two's complement for negatives, as protobuf writes them). */
function varint64Size(value: bigint): number {
  let v = BigInt.asUintN(64, value);
  if (v <= MAX_SAFE) return varintSize(Number(v));
  let size = 1;
  while (v >= 128n) {
    v >>= 7n;
    size++;
  }
  return size;
}

/** Size of an int32 varint: negatives take ten bytes (sign-extended to 64 bits). */
const int32Size = (value: number): number => (value < 0 ? 10 : varintSize(value));

const utf8Length = (text: string): number => (text.length === 0 ? 0 : Buffer.byteLength(text, 'utf8'));

/** Size of a length-delimited field with a one-byte tag, `length` bytes long. */
const lenFieldSize = (length: number): number => 1 + varintSize(length) + length;

class Writer {
  readonly buf: Buffer;
  pos = 0;

  constructor(size: number) {
    this.buf = Buffer.allocUnsafe(size);
  }

  byte(value: number): void {
    this.buf[this.pos++] = value;
  }

  varint(value: number): void {
    const buf = this.buf;
    let pos = this.pos;
    while (value >= 128) {
      buf[pos++] = (value % 128) | 128;
      value = Math.floor(value / 128);
    }
    buf[pos++] = value;
    this.pos = pos;
  }

  varint64(value: bigint): void {
    let v = BigInt.asUintN(64, value);
    if (v <= MAX_SAFE) return this.varint(Number(v));
    while (v >= 128n) {
      this.byte(Number(v & 127n) | 128);
      v >>= 7n;
    }
    this.byte(Number(v));
  }

  int32(value: number): void {
    if (value >= 0) this.varint(value);
    else this.varint64(BigInt(value));
  }

  /** A string whose UTF-8 length the sizing pass measured. */
  string(text: string, length: number): void {
    this.varint(length);
    if (length > 0) this.pos += this.buf.write(text, this.pos, length, 'utf8');
  }

  double(value: number): void {
    this.buf.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  // Fields, each written only when it is not its default (proto3 implicit presence).

  stringField(field: number, text: string, length: number): void {
    if (length === 0) return;
    this.byte(tag(field, LEN));
    this.string(text, length);
  }

  uint32Field(field: number, value: number): void {
    if (value === 0) return;
    this.byte(tag(field, VARINT));
    this.varint(value);
  }

  int32Field(field: number, value: number): void {
    if (value === 0) return;
    this.byte(tag(field, VARINT));
    this.int32(value);
  }

  uint64Field(field: number, value: bigint): void {
    if (value === 0n) return;
    this.byte(tag(field, VARINT));
    this.varint64(value);
  }

  doubleField(field: number, value: number): void {
    if (value === 0) return;
    this.byte(tag(field, FIXED64));
    this.double(value);
  }

  /** A message field of `size` bytes (negative: unset), its body written by `body`. */
  messageField(field: number, size: number, body: () => void): void {
    if (size < 0) return;
    this.byte(tag(field, LEN));
    this.varint(size);
    body();
  }
}

// Sizes of the same fields (0 when not written).
const stringFieldSize = (length: number): number => (length === 0 ? 0 : lenFieldSize(length));
const uint32FieldSize = (value: number): number => (value === 0 ? 0 : 1 + varintSize(value));
const int32FieldSize = (value: number): number => (value === 0 ? 0 : 1 + int32Size(value));
const uint64FieldSize = (value: bigint): number => (value === 0n ? 0 : 1 + varint64Size(value));
const doubleFieldSize = (value: number): number => (value === 0 ? 0 : 9);
const messageFieldSize = (size: number): number => (size < 0 ? 0 : lenFieldSize(size));

// ---------------------------------------------------------------------------
// Encoding. Each message is sized first (lengths pushed onto `sizes` in the
// order the writing pass consumes them), then written into one buffer.

const timestampSize = (ts: Timestamp | undefined): number =>
  ts === undefined ? -1 : uint64FieldSize(ts.seconds) + int32FieldSize(ts.nanos);

function writeTimestamp(out: Writer, field: number, ts: Timestamp | undefined, size: number): void {
  out.messageField(field, size, () => {
    out.uint64Field(1, ts!.seconds);
    out.int32Field(2, ts!.nanos);
  });
}

/** Sizes of one Assignment: pushes its string lengths, timestamp size and body size; returns the body size. */
function sizeAssignment(a: Assignment, sizes: number[]): number {
  const jobId = utf8Length(a.jobId);
  const runId = utf8Length(a.runId);
  const task = utf8Length(a.task);
  const payload = utf8Length(a.payloadJson);
  const trace = utf8Length(a.traceparent);
  const scheduled = timestampSize(a.scheduledFor);
  const size =
    stringFieldSize(jobId) +
    stringFieldSize(runId) +
    stringFieldSize(task) +
    uint32FieldSize(a.attempt) +
    uint32FieldSize(a.maxAttempts) +
    uint64FieldSize(a.leaseGeneration) +
    uint32FieldSize(a.leaseRemainingMs) +
    uint32FieldSize(a.timeoutMs) +
    messageFieldSize(scheduled) +
    uint64FieldSize(a.anchorSeq) +
    stringFieldSize(payload) +
    stringFieldSize(trace) +
    doubleFieldSize(a.startAtMs);
  sizes.push(jobId, runId, task, payload, trace, scheduled, size);
  return size;
}

function writeAssignment(out: Writer, a: Assignment, sizes: number[], at: number): number {
  out.byte(tag(1, LEN));
  out.varint(sizes[at + 6]!);
  out.stringField(1, a.jobId, sizes[at]!);
  out.stringField(2, a.runId, sizes[at + 1]!);
  out.stringField(3, a.task, sizes[at + 2]!);
  out.uint32Field(5, a.attempt);
  out.uint32Field(6, a.maxAttempts);
  out.uint64Field(7, a.leaseGeneration);
  out.uint32Field(8, a.leaseRemainingMs);
  out.uint32Field(9, a.timeoutMs);
  writeTimestamp(out, 10, a.scheduledFor, sizes[at + 5]!);
  out.uint64Field(11, a.anchorSeq);
  out.stringField(12, a.payloadJson, sizes[at + 3]!);
  out.stringField(13, a.traceparent, sizes[at + 4]!);
  out.doubleField(14, a.startAtMs);
  return at + 7;
}

function sizeOutcomeAck(ack: OutcomeAck, sizes: number[]): number {
  const jobId = utf8Length(ack.jobId);
  const size = stringFieldSize(jobId) + uint64FieldSize(ack.leaseGeneration) + int32FieldSize(ack.result);
  sizes.push(jobId, size);
  return size;
}

function writeOutcomeAck(out: Writer, ack: OutcomeAck, sizes: number[], at: number): number {
  out.byte(tag(1, LEN));
  out.varint(sizes[at + 1]!);
  out.stringField(1, ack.jobId, sizes[at]!);
  out.uint64Field(2, ack.leaseGeneration);
  out.int32Field(3, ack.result);
  return at + 2;
}

function sizeLeaseOutcome(o: LeaseOutcome, sizes: number[]): number {
  const jobId = utf8Length(o.jobId);
  const error = utf8Length(o.error);
  const trace = utf8Length(o.traceparent);
  const finished = timestampSize(o.finishedAt);
  const size =
    stringFieldSize(jobId) +
    uint64FieldSize(o.leaseGeneration) +
    int32FieldSize(o.result) +
    stringFieldSize(error) +
    messageFieldSize(finished) +
    stringFieldSize(trace);
  sizes.push(jobId, error, trace, finished, size);
  return size;
}

function writeLeaseOutcome(out: Writer, o: LeaseOutcome, sizes: number[], at: number): number {
  out.byte(tag(1, LEN));
  out.varint(sizes[at + 4]!);
  out.stringField(1, o.jobId, sizes[at]!);
  out.uint64Field(2, o.leaseGeneration);
  out.int32Field(3, o.result);
  out.stringField(4, o.error, sizes[at + 1]!);
  writeTimestamp(out, 5, o.finishedAt, sizes[at + 3]!);
  out.stringField(6, o.traceparent, sizes[at + 2]!);
  return at + 5;
}

function sizeLeaseRef(ref: LeaseRef, sizes: number[]): number {
  const jobId = utf8Length(ref.jobId);
  const size = stringFieldSize(jobId) + uint64FieldSize(ref.leaseGeneration);
  sizes.push(jobId, size);
  return size;
}

/** A LeaseRef as Heartbeat's field 2. */
function writeLeaseRef(out: Writer, ref: LeaseRef, sizes: number[], at: number): number {
  out.byte(tag(2, LEN));
  out.varint(sizes[at + 1]!);
  out.stringField(1, ref.jobId, sizes[at]!);
  out.uint64Field(2, ref.leaseGeneration);
  return at + 2;
}

const isUint32 = (value: number): boolean => Number.isInteger(value) && value >= 0 && value <= 0xffffffff;

/** Sizes of one LeaseStatus; its oneof `state` is written when set, `remaining_ms` even when 0 (oneof members have presence). */
function sizeLeaseStatus(status: LeaseStatus, sizes: number[]): number {
  const jobId = utf8Length(status.jobId);
  let state = 0;
  let lost = -1;
  const kind = status.state;
  if (kind.case === 'remainingMs') {
    if (!isUint32(kind.value)) throw NOT_HOT;
    state = 1 + varintSize(kind.value);
  } else if (kind.case === 'lost') {
    if (hasUnknown(kind.value)) throw NOT_HOT;
    lost = int32FieldSize(kind.value.reason);
    state = lenFieldSize(lost);
  } else if (kind.case !== undefined) {
    throw NOT_HOT;
  }
  const size = stringFieldSize(jobId) + uint64FieldSize(status.leaseGeneration) + state + (status.abortRequested ? 2 : 0);
  sizes.push(jobId, lost, size);
  return size;
}

/** A LeaseStatus as RenewReply's field 2. */
function writeLeaseStatus(out: Writer, status: LeaseStatus, sizes: number[], at: number): number {
  out.byte(tag(2, LEN));
  out.varint(sizes[at + 2]!);
  out.stringField(1, status.jobId, sizes[at]!);
  out.uint64Field(2, status.leaseGeneration);
  const kind = status.state;
  if (kind.case === 'remainingMs') {
    out.byte(tag(3, VARINT));
    out.varint(kind.value);
  } else if (kind.case === 'lost') {
    out.messageField(4, sizes[at + 1]!, () => out.int32Field(1, kind.value.reason));
  }
  if (status.abortRequested) {
    out.byte(tag(5, VARINT));
    out.byte(1);
  }
  return at + 3;
}

/** AgentMessage field 2: Heartbeat { seq = 1; repeated LeaseRef leases = 2 }. */
function encodeHeartbeat(heartbeat: Heartbeat): Uint8Array | undefined {
  const sizes: number[] = [];
  const inner = uint64FieldSize(heartbeat.seq) + sizeItems(heartbeat.leases, sizeLeaseRef, sizes);
  return envelope(2, inner, (out) => {
    out.uint64Field(1, heartbeat.seq);
    writeItems(out, heartbeat.leases, writeLeaseRef, sizes);
  });
}

/** CoordinatorMessage field 3: RenewReply { seq = 1; repeated LeaseStatus statuses = 2; double 3, 4, 5 }. */
function encodeRenewReply(reply: RenewReply): Uint8Array | undefined {
  const sizes: number[] = [];
  const inner =
    uint64FieldSize(reply.seq) +
    sizeItems(reply.statuses, sizeLeaseStatus, sizes) +
    doubleFieldSize(reply.dbTimeMs) +
    doubleFieldSize(reply.dbTimeErrorMs) +
    doubleFieldSize(reply.heldMs);
  return envelope(3, inner, (out) => {
    out.uint64Field(1, reply.seq);
    writeItems(out, reply.statuses, writeLeaseStatus, sizes);
    out.doubleField(3, reply.dbTimeMs);
    out.doubleField(4, reply.dbTimeErrorMs);
    out.doubleField(5, reply.heldMs);
  });
}

interface ListCodec<T> {
  size(item: T, sizes: number[]): number;
  write(out: Writer, item: T, sizes: number[], at: number): number;
}

const ASSIGNMENT: ListCodec<Assignment> = { size: sizeAssignment, write: writeAssignment };
const OUTCOME_ACK: ListCodec<OutcomeAck> = { size: sizeOutcomeAck, write: writeOutcomeAck };
const LEASE_OUTCOME: ListCodec<LeaseOutcome> = { size: sizeLeaseOutcome, write: writeLeaseOutcome };

/** True when a message carries fields protobuf-es kept from a newer schema. */
const hasUnknown = (message: object): boolean => {
  const unknown = (message as { $unknown?: unknown[] }).$unknown;
  return unknown !== undefined && unknown.length > 0;
};

/**
 * An envelope whose oneof `field` holds a message with one repeated field 1
 * (`Assignments`, `OutcomeAcks`, `Outcomes`). The list's items are sized, then
 * everything is written into one buffer.
 */
function encodeList<T extends object>(field: number, items: readonly T[], codec: ListCodec<T>): Uint8Array | undefined {
  const sizes: number[] = [];
  return envelope(field, sizeItems(items, codec.size, sizes), (out) => writeItems(out, items, codec.write, sizes));
}

/**
 * The bytes `items` take as length-delimited fields, each sized by `size`
 * (which pushes what the writing pass needs onto `sizes`). An item carrying
 * unknown fields is left to toBinary (NOT_HOT).
 */
function sizeItems<T extends object>(items: readonly T[], size: (item: T, sizes: number[]) => number, sizes: number[]): number {
  let total = 0;
  for (const item of items) {
    if (hasUnknown(item)) throw NOT_HOT;
    total += lenFieldSize(size(item, sizes));
  }
  return total;
}

/** Writes `items` with `write`, reading the sizes `sizeItems` pushed for them, in order. */
function writeItems<T>(out: Writer, items: readonly T[], write: ListCodec<T>['write'], sizes: number[]): void {
  let at = 0;
  for (const item of items) at = write(out, item, sizes, at);
}

/** One buffer: oneof `field` holding `inner` bytes that `body` writes; undefined if the sizing and the writing disagree. */
function envelope(field: number, inner: number, body: (out: Writer) => void): Uint8Array | undefined {
  const out = new Writer(lenFieldSize(inner));
  out.byte(tag(field, LEN));
  out.varint(inner);
  body(out);
  return out.pos === out.buf.length ? out.buf : undefined;
}

/** The bytes of a CoordinatorMessage carrying assignments or outcome acks; undefined for anything else. */
export function encodeCoordinatorMessage(message: CoordinatorMessage): Uint8Array | undefined {
  const kind = message.kind;
  if (hasUnknown(message) || kind.case === undefined || hasUnknown(kind.value)) return undefined;
  if (kind.case === 'assignments') return attempt(() => encodeList(2, kind.value.assignments, ASSIGNMENT));
  if (kind.case === 'outcomeAcks') return attempt(() => encodeList(4, kind.value.acks, OUTCOME_ACK));
  if (kind.case === 'renewReply') return attempt(() => encodeRenewReply(kind.value));
  return undefined;
}

/** The bytes of an AgentMessage carrying outcomes; undefined for anything else. */
export function encodeAgentMessage(message: AgentMessage): Uint8Array | undefined {
  const kind = message.kind;
  if (hasUnknown(message) || kind.case === undefined || hasUnknown(kind.value)) return undefined;
  if (kind.case === 'outcomes') return attempt(() => encodeList(3, kind.value.outcomes, LEASE_OUTCOME));
  if (kind.case === 'heartbeat') return attempt(() => encodeHeartbeat(kind.value));
  return undefined;
}

// ---------------------------------------------------------------------------
// Decoding. Any surprise throws NOT_HOT and the caller falls back.

class Reader {
  readonly buf: Buffer;
  pos: number;
  end: number;

  constructor(bytes: Uint8Array) {
    this.buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = 0;
    this.end = bytes.byteLength;
  }

  /**
   * A varint: a number when it is at most 7 bytes (49 bits, exact in a
   * double), otherwise an unsigned 64-bit bigint read again from its start.
   */
  value(): number | bigint {
    const buf = this.buf;
    const start = this.pos;
    let result = 0;
    let multiplier = 1;
    for (let i = 0; i < 7; i++) {
      if (this.pos >= this.end) throw NOT_HOT;
      const b = buf[this.pos++]!;
      result += (b & 127) * multiplier;
      if (b < 128) return result;
      multiplier *= 128;
    }
    this.pos = start;
    let big = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw NOT_HOT;
      const b = buf[this.pos++]!;
      big |= BigInt(b & 127) << shift;
      if (b < 128) return BigInt.asUintN(64, big);
      shift += 7n;
    }
    throw NOT_HOT;
  }

  /** A key or a length: a varint that must fit a number. */
  varint(): number {
    const value = this.value();
    if (typeof value !== 'number') throw NOT_HOT;
    return value;
  }

  uint64(): bigint {
    const value = this.value();
    return typeof value === 'number' ? BigInt(value) : value;
  }

  int64(): bigint {
    const value = this.value();
    return typeof value === 'number' ? BigInt(value) : BigInt.asIntN(64, value);
  }

  /** uint32: the low 32 bits of the varint, as protobuf-es reads it. */
  uint32(): number {
    const value = this.value();
    return typeof value === 'number' && value <= 0xffffffff ? value : Number(BigInt.asUintN(32, BigInt(value)));
  }

  /** int32 / enum: the low 32 bits, signed. */
  int32(): number {
    const value = this.value();
    return typeof value === 'number' && value <= 0x7fffffff ? value : Number(BigInt.asIntN(32, BigInt(value)));
  }

  /** The length of a length-delimited field; the bytes must be there. */
  length(): number {
    const length = this.varint();
    if (length > this.end - this.pos) throw NOT_HOT;
    return length;
  }

  string(): string {
    const length = this.length();
    const start = this.pos;
    this.pos += length;
    return this.buf.toString('utf8', start, this.pos);
  }

  double(): number {
    if (this.end - this.pos < 8) throw NOT_HOT;
    const value = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return value;
  }

  /** Reads a nested message of `length` bytes with `read`, then checks it ended exactly there. */
  nested<T>(read: (end: number) => T): T {
    const length = this.length();
    const outerEnd = this.end;
    this.end = this.pos + length;
    const value = read(this.end);
    if (this.pos !== this.end) throw NOT_HOT;
    this.end = outerEnd;
    return value;
  }

  /** Reads a nested message: every field's number and wire type to `visit`, which reads its value. */
  message(visit: (field: number, wireType: number) => void): void {
    this.nested((end) => {
      while (this.pos < end) {
        const key = this.varint();
        visit(key >>> 3, key & 7);
      }
    });
  }

  // A field's value, its wire type checked first.

  stringField(wireType: number): string {
    expectWireType(wireType, LEN);
    return this.string();
  }

  uint32Field(wireType: number): number {
    expectWireType(wireType, VARINT);
    return this.uint32();
  }

  int32Field(wireType: number): number {
    expectWireType(wireType, VARINT);
    return this.int32();
  }

  uint64Field(wireType: number): bigint {
    expectWireType(wireType, VARINT);
    return this.uint64();
  }

  int64Field(wireType: number): bigint {
    expectWireType(wireType, VARINT);
    return this.int64();
  }

  doubleField(wireType: number): number {
    expectWireType(wireType, FIXED64);
    return this.double();
  }
}

function expectWireType(actual: number, expected: number): void {
  if (actual !== expected) throw NOT_HOT;
}

function readTimestamp(input: Reader, into: Timestamp | undefined): Timestamp {
  // A repeated message field merges, as protobuf does.
  const ts: Timestamp = into ?? { $typeName: 'google.protobuf.Timestamp', seconds: 0n, nanos: 0 };
  input.message((field, wireType) => {
    if (field === 1) ts.seconds = input.int64Field(wireType);
    else if (field === 2) ts.nanos = input.int32Field(wireType);
    else throw NOT_HOT;
  });
  return ts;
}

function timestampField(input: Reader, wireType: number, into: Timestamp | undefined): Timestamp {
  expectWireType(wireType, LEN);
  return readTimestamp(input, into);
}

function readAssignment(input: Reader): Assignment {
  const a: Assignment = {
    $typeName: 'kairos.v1.Assignment',
    jobId: '',
    runId: '',
    task: '',
    attempt: 0,
    maxAttempts: 0,
    leaseGeneration: 0n,
    leaseRemainingMs: 0,
    timeoutMs: 0,
    anchorSeq: 0n,
    payloadJson: '',
    traceparent: '',
    startAtMs: 0,
  };
  input.message((field, wireType) => {
    switch (field) {
      case 1: a.jobId = input.stringField(wireType); break;
      case 2: a.runId = input.stringField(wireType); break;
      case 3: a.task = input.stringField(wireType); break;
      case 5: a.attempt = input.uint32Field(wireType); break;
      case 6: a.maxAttempts = input.uint32Field(wireType); break;
      case 7: a.leaseGeneration = input.uint64Field(wireType); break;
      case 8: a.leaseRemainingMs = input.uint32Field(wireType); break;
      case 9: a.timeoutMs = input.uint32Field(wireType); break;
      case 10: a.scheduledFor = timestampField(input, wireType, a.scheduledFor); break;
      case 11: a.anchorSeq = input.uint64Field(wireType); break;
      case 12: a.payloadJson = input.stringField(wireType); break;
      case 13: a.traceparent = input.stringField(wireType); break;
      case 14: a.startAtMs = input.doubleField(wireType); break;
      default: throw NOT_HOT;
    }
  });
  return a;
}

function readOutcomeAck(input: Reader): OutcomeAck {
  const ack: OutcomeAck = { $typeName: 'kairos.v1.OutcomeAck', jobId: '', leaseGeneration: 0n, result: 0 };
  input.message((field, wireType) => {
    switch (field) {
      case 1: ack.jobId = input.stringField(wireType); break;
      case 2: ack.leaseGeneration = input.uint64Field(wireType); break;
      case 3: ack.result = input.int32Field(wireType); break;
      default: throw NOT_HOT;
    }
  });
  return ack;
}

function readLeaseOutcome(input: Reader): LeaseOutcome {
  const o: LeaseOutcome = { $typeName: 'kairos.v1.LeaseOutcome', jobId: '', leaseGeneration: 0n, result: 0, error: '', traceparent: '' };
  input.message((field, wireType) => {
    switch (field) {
      case 1: o.jobId = input.stringField(wireType); break;
      case 2: o.leaseGeneration = input.uint64Field(wireType); break;
      case 3: o.result = input.int32Field(wireType); break;
      case 4: o.error = input.stringField(wireType); break;
      case 5: o.finishedAt = timestampField(input, wireType, o.finishedAt); break;
      case 6: o.traceparent = input.stringField(wireType); break;
      default: throw NOT_HOT;
    }
  });
  return o;
}

/** A bool: any non-zero varint is true, as protobuf-es reads it. */
function boolField(input: Reader, wireType: number): boolean {
  expectWireType(wireType, VARINT);
  const value = input.value();
  return typeof value === 'number' ? value !== 0 : value !== 0n;
}

function readLeaseRef(input: Reader): LeaseRef {
  const ref: LeaseRef = { $typeName: 'kairos.v1.LeaseRef', jobId: '', leaseGeneration: 0n };
  input.message((field, wireType) => {
    switch (field) {
      case 1: ref.jobId = input.stringField(wireType); break;
      case 2: ref.leaseGeneration = input.uint64Field(wireType); break;
      default: throw NOT_HOT;
    }
  });
  return ref;
}

function readLeaseLost(input: Reader, wireType: number): LeaseLost {
  expectWireType(wireType, LEN);
  const lost: LeaseLost = { $typeName: 'kairos.v1.LeaseLost', reason: 0 };
  input.message((field, innerType) => {
    if (field === 1) lost.reason = input.int32Field(innerType);
    else throw NOT_HOT;
  });
  return lost;
}

function readLeaseStatus(input: Reader): LeaseStatus {
  const status: LeaseStatus = {
    $typeName: 'kairos.v1.LeaseStatus',
    jobId: '',
    leaseGeneration: 0n,
    state: { case: undefined },
    abortRequested: false,
  };
  input.message((field, wireType) => {
    switch (field) {
      case 1: status.jobId = input.stringField(wireType); break;
      case 2: status.leaseGeneration = input.uint64Field(wireType); break;
      // The oneof set twice (protobuf overwrites or merges) is left to fromBinary.
      case 3:
        if (status.state.case !== undefined) throw NOT_HOT;
        status.state = { case: 'remainingMs', value: input.uint32Field(wireType) };
        break;
      case 4:
        if (status.state.case !== undefined) throw NOT_HOT;
        status.state = { case: 'lost', value: readLeaseLost(input, wireType) };
        break;
      case 5: status.abortRequested = boolField(input, wireType); break;
      default: throw NOT_HOT;
    }
  });
  return status;
}

/**
 * An envelope that is exactly one occurrence of oneof field `field`, holding a
 * message read field by field by `visit`. Throws NOT_HOT otherwise.
 */
function readEnvelope(bytes: Uint8Array, field: number, visit: (input: Reader, field: number, wireType: number) => void): void {
  const input = new Reader(bytes);
  if (input.varint() !== tag(field, LEN)) throw NOT_HOT;
  input.message((inner, wireType) => visit(input, inner, wireType));
  if (input.pos !== input.end) throw NOT_HOT;
}

function decodeHeartbeat(bytes: Uint8Array): Heartbeat {
  const heartbeat: Heartbeat = { $typeName: 'kairos.v1.Heartbeat', seq: 0n, leases: [] };
  readEnvelope(bytes, 2, (input, field, wireType) => {
    if (field === 1) heartbeat.seq = input.uint64Field(wireType);
    else if (field === 2 && wireType === LEN) heartbeat.leases.push(readLeaseRef(input));
    else throw NOT_HOT;
  });
  return heartbeat;
}

function decodeRenewReply(bytes: Uint8Array): RenewReply {
  const reply: RenewReply = { $typeName: 'kairos.v1.RenewReply', seq: 0n, statuses: [], dbTimeMs: 0, dbTimeErrorMs: 0, heldMs: 0 };
  readEnvelope(bytes, 3, (input, field, wireType) => {
    switch (field) {
      case 1: reply.seq = input.uint64Field(wireType); break;
      case 2:
        expectWireType(wireType, LEN);
        reply.statuses.push(readLeaseStatus(input));
        break;
      case 3: reply.dbTimeMs = input.doubleField(wireType); break;
      case 4: reply.dbTimeErrorMs = input.doubleField(wireType); break;
      case 5: reply.heldMs = input.doubleField(wireType); break;
      default: throw NOT_HOT;
    }
  });
  return reply;
}

/**
 * An envelope that is exactly one occurrence of oneof field `field`, holding a
 * list (field 1) read by `readItem`. Returns the list, or throws NOT_HOT.
 */
function readList<T>(bytes: Uint8Array, field: number, readItem: (input: Reader) => T): T[] {
  const items: T[] = [];
  readEnvelope(bytes, field, (input, inner, wireType) => {
    if (inner !== 1 || wireType !== LEN) throw NOT_HOT;
    items.push(readItem(input));
  });
  return items;
}

/** Runs an encoder or decoder: undefined when it declined (NOT_HOT) or ran out of input, so the caller uses protobuf-es. */
function attempt<T>(run: () => T): T | undefined {
  try {
    return run();
  } catch (error: unknown) {
    if (error === NOT_HOT || error instanceof RangeError) return undefined;
    throw error;
  }
}

/** The first byte of each handled envelope: its oneof field's tag. */
const ASSIGNMENTS_TAG = tag(2, LEN);
const OUTCOME_ACKS_TAG = tag(4, LEN);
const OUTCOMES_TAG = tag(3, LEN);
const RENEW_REPLY_TAG = tag(3, LEN);
const HEARTBEAT_TAG = tag(2, LEN);

export function decodeCoordinatorMessage(bytes: Uint8Array): CoordinatorMessage | undefined {
  const first = bytes[0];
  if (first === ASSIGNMENTS_TAG) {
    return attempt(() => {
      const assignments = readList(bytes, 2, readAssignment);
      return {
        $typeName: 'kairos.v1.CoordinatorMessage',
        kind: { case: 'assignments', value: { $typeName: 'kairos.v1.Assignments', assignments } },
      };
    });
  }
  if (first === OUTCOME_ACKS_TAG) {
    return attempt(() => {
      const acks = readList(bytes, 4, readOutcomeAck);
      return {
        $typeName: 'kairos.v1.CoordinatorMessage',
        kind: { case: 'outcomeAcks', value: { $typeName: 'kairos.v1.OutcomeAcks', acks } },
      };
    });
  }
  if (first === RENEW_REPLY_TAG) {
    return attempt(() => ({ $typeName: 'kairos.v1.CoordinatorMessage', kind: { case: 'renewReply', value: decodeRenewReply(bytes) } }));
  }
  return undefined;
}

export function decodeAgentMessage(bytes: Uint8Array): AgentMessage | undefined {
  if (bytes[0] === HEARTBEAT_TAG) {
    return attempt(() => ({ $typeName: 'kairos.v1.AgentMessage', kind: { case: 'heartbeat', value: decodeHeartbeat(bytes) } }));
  }
  if (bytes[0] !== OUTCOMES_TAG) return undefined;
  return attempt(() => {
    const outcomes = readList(bytes, 3, readLeaseOutcome);
    return {
      $typeName: 'kairos.v1.AgentMessage',
      kind: { case: 'outcomes', value: { $typeName: 'kairos.v1.Outcomes', outcomes } },
    };
  });
}

export interface HotCodec {
  /** The message's bytes, or undefined: use toBinary. */
  encode(message: unknown): Uint8Array | undefined;
  /** The message, or undefined: use fromBinary. */
  decode(bytes: Uint8Array): unknown;
}

/** The hot codec of a schema (the two agent stream envelopes), if it has one. */
export function hotCodecFor(schema: DescMessage): HotCodec | undefined {
  if (schema === CoordinatorMessageSchema) {
    return { encode: (message) => encodeCoordinatorMessage(message as CoordinatorMessage), decode: decodeCoordinatorMessage };
  }
  if (schema === AgentMessageSchema) {
    return { encode: (message) => encodeAgentMessage(message as AgentMessage), decode: decodeAgentMessage };
  }
  return undefined;
}
