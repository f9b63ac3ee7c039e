/**
 * Complete messages (with their `$typeName` and every field) for the agent
 * stream's per-job messages. protobuf-es's `create`, which the grpc adapter
 * runs on whatever it is asked to send (grpc.ts), takes a complete message as
 * it is, but builds an init object's every message field by field by
 * reflection: about 2 µs per Outcome or Assignment (its Timestamp included),
 * thousands of times a second on each side of the stream.
 */
import type { Timestamp } from '@bufbuild/protobuf/wkt';

/** A Timestamp message for a wall-clock instant in milliseconds (what `timestampFromMs` gives, without `create`). */
export function timestampMessage(ms: number): Timestamp {
  const seconds = Math.floor(ms / 1000);
  return { $typeName: 'google.protobuf.Timestamp', seconds: BigInt(seconds), nanos: Math.round((ms - seconds * 1000) * 1_000_000) };
}
