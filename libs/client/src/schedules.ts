/**
 * Schedule previews (PreviewSchedule, ListUpcoming): occurrences as instants
 * and local readings, marked where daylight saving time moved them.
 */
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import {
  DstMark as WireDstMark,
  type ListUpcomingResponse,
  type Occurrence as WireOccurrence,
  type PreviewScheduleResponse,
} from '@kairos/proto';
import { instant, requireText, uint32 } from './jobs';
import { dateOrNull, textOrNull } from './wire-values';

/**
 * What DST did to an occurrence: `gap-shifted` (the written reading fell in a
 * spring-forward gap and fires later by the gap), `repeated-first` (the first
 * instant of a reading that occurs twice), `repeated-elapsed` (the second pass
 * of a repeated hour, kept by schedules that allow every hour).
 */
export type DstMark = 'gap-shifted' | 'repeated-first' | 'repeated-elapsed';

export interface Occurrence {
  at: Date | null;
  /** Local reading in the schedule's zone, `YYYY-MM-DDTHH:mm:ss`. */
  local: string;
  /** UTC offset at that instant, `+02:00`. */
  offset: string;
  /** null: a plain occurrence. */
  dst: DstMark | null;
  /** `gap-shifted` only: the reading the expression asked for. */
  scheduledLocal: string | null;
}

export interface SchedulePreview {
  /** The schedule as normalised by the server; null for a one-off job. */
  schedule: string | null;
  timezone: string;
  occurrences: Occurrence[];
}

export interface PreviewScheduleInput {
  /** Cron expression, 5 or 6 fields. Required. */
  schedule: string;
  /** IANA zone; default UTC. */
  timezone?: string;
  /** 1 to 1000; default 10. */
  count?: number;
  /** First occurrence at or after this; default now. */
  from?: Date | string;
}

const DST_FROM_WIRE: Record<number, DstMark | undefined> = {
  [WireDstMark.GAP_SHIFTED]: 'gap-shifted',
  [WireDstMark.REPEATED_FIRST]: 'repeated-first',
  [WireDstMark.REPEATED_ELAPSED]: 'repeated-elapsed',
};

export function previewRequest(input: PreviewScheduleInput) {
  requireText(input.schedule, 'schedule');
  return {
    schedule: input.schedule,
    timezone: input.timezone ?? '',
    count: uint32(input.count, 'count'),
    ...(input.from === undefined ? {} : { from: timestampFromDate(instant(input.from, 'from')) }),
  };
}

export function occurrenceFromWire(occurrence: WireOccurrence): Occurrence {
  return {
    at: dateOrNull(occurrence.at),
    local: occurrence.local,
    offset: occurrence.offset,
    dst: DST_FROM_WIRE[occurrence.dst] ?? null,
    scheduledLocal: textOrNull(occurrence.scheduledLocal),
  };
}

/** A PreviewSchedule or ListUpcoming answer: the normalised schedule, its zone and the occurrences. */
export function previewFromWire(response: PreviewScheduleResponse | ListUpcomingResponse): SchedulePreview {
  return { schedule: textOrNull(response.schedule), timezone: response.timezone, occurrences: response.occurrences.map(occurrenceFromWire) };
}
