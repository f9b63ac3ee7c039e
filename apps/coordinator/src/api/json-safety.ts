/**
 * What PostgreSQL's jsonb/text and the gRPC encoding of a payload cannot
 * hold, checked before anything else touches a request: nesting deeper than
 * MAX_PAYLOAD_DEPTH (google.protobuf.Struct encodes every JSON level as two
 * messages, and deep values also overflow recursive code), the NUL character
 * (jsonb and text refuse it) and lone UTF-16 surrogates (not Unicode; jsonb
 * refuses their escapes). The walk is iterative, so a hostile depth cannot
 * overflow the stack here.
 */
/** Levels of objects/arrays a payload may nest (the payload object itself is level 1). */
export const MAX_PAYLOAD_DEPTH = 32;

interface Frame {
  value: unknown;
  path: string;
  depth: number;
}

/** What is wrong, and where: `field` is a dotted path from a request field (e.g. `payload.items.3.name`). */
export interface JsonProblem {
  field: string;
  message: string;
}

/**
 * The first offending place among a request's fields, or undefined when there
 * is none. Each field's value counts as level 1 of its own nesting.
 */
export function findJsonProblem(fields: Record<string, unknown>, maxDepth: number): JsonProblem | undefined {
  const stack: Frame[] = [];
  for (const [key, value] of Object.entries(fields)) {
    // An empty key is still named: `""`, so the error always has a field.
    const path = key === '' ? '""' : key;
    const problem = textProblem(key, path, 'key');
    if (problem) return problem;
    stack.push({ value, path, depth: 0 });
  }
  while (stack.length > 0) {
    const { value: current, path, depth } = stack.pop()!;
    if (typeof current === 'string') {
      const problem = textProblem(current, path);
      if (problem) return problem;
      continue;
    }
    if (current === null || typeof current !== 'object') continue;
    if (depth + 1 > maxDepth) {
      const field = path.split('.')[0]!;
      return { field, message: `${field} nests deeper than ${maxDepth} levels of objects and arrays` };
    }
    const isArray = Array.isArray(current);
    const entries = isArray ? current.map((item, index) => [String(index), item] as const) : Object.entries(current);
    for (const [key, item] of entries) {
      const at = `${path}.${key}`;
      const problem = isArray ? undefined : textProblem(key, at, 'key');
      if (problem) return problem;
      stack.push({ value: item, path: at, depth: depth + 1 });
    }
  }
  return undefined;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function textProblem(text: string, path: string, what: 'key' | 'value' = 'value'): JsonProblem | undefined {
  if (text.includes('\u0000')) {
    return { field: path, message: `${path} contains the NUL character (\\u0000) in a ${what}, which cannot be stored` };
  }
  if (LONE_SURROGATE.test(text)) {
    return { field: path, message: `${path} contains a lone UTF-16 surrogate in a ${what}: not valid Unicode` };
  }
  return undefined;
}
