/**
 * Proto3 scalar conventions, translated once for every result type.
 *
 * proto3 has no "absent" for scalars: an unset string is `""`, an unset
 * message field (a Timestamp) is `undefined`, and 64-bit integers arrive as
 * `bigint`. Results of this client use `null` for "not set" and plain numbers,
 * so they print and serialise (JSON.stringify) without surprises.
 */
import { timestampDate, type Timestamp } from '@bufbuild/protobuf/wkt';

/** A Timestamp as a Date; `null` when the server left it unset. */
export function dateOrNull(timestamp: Timestamp | undefined): Date | null {
  return timestamp === undefined ? null : timestampDate(timestamp);
}

/** A string field where `""` means "none". */
export function textOrNull(text: string): string | null {
  return text === '' ? null : text;
}

/**
 * A uint64 counter (lease generations) as a number. Generations grow by one per
 * claim, so they stay far below 2^53 and the conversion is exact in practice.
 */
export function counter(value: bigint): number {
  return Number(value);
}
