/**
 * Rendering for humans (aligned columns, short UTC timestamps) and for scripts
 * (`--json`: exactly one JSON document on stdout).
 */
import type { TextSink } from './io';

/** The whole of `--json` output: one document, newline-terminated. Dates become RFC 3339 strings. */
export function writeJson(out: TextSink, value: unknown): void {
  out.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Shown for a value that is not set. */
export const NONE = '-';

/** A UTC timestamp without milliseconds when they are zero: 2030-01-01T09:00:00Z. */
export function formatTime(date: Date | null): string {
  if (date === null) return NONE;
  return date.toISOString().replace('.000Z', 'Z');
}

/**
 * Columns padded to their widest cell, two spaces apart, header first; no
 * trailing spaces. Cells are flattened to one line.
 */
export function formatTable(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const cells = [headers, ...rows].map((row) => row.map(oneLine));
  const widths = headers.map((_, column) => Math.max(...cells.map((row) => (row[column] ?? '').length)));
  return cells
    .map((row) =>
      row
        .map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .map((line) => `${line}\n`)
    .join('');
}

/** `label: value` lines with the values aligned. */
export function formatFields(fields: ReadonlyArray<readonly [string, string]>): string {
  const width = Math.max(...fields.map(([label]) => label.length)) + 1;
  return fields.map(([label, value]) => `${`${label}:`.padEnd(width)}  ${oneLine(value)}\n`).join('');
}

/** Long free text (error messages) shortened for a table cell. */
export function truncate(text: string, max = 60): string {
  const flat = oneLine(text);
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ');
}
