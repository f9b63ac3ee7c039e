import { unsafePattern } from './payload-schemas';

describe('unsafePattern: regular expressions an agent may not make the coordinator run', () => {
  it('finds an exponential pattern anywhere in a schema, in pattern or patternProperties', () => {
    expect(unsafePattern({ type: 'object', properties: { a: { type: 'string', pattern: '^[a-z]+$' } } })).toBeNull();
    expect(unsafePattern({ properties: { a: { items: [{ pattern: '(a+)+$' }] } } })).toBe('(a+)+$');
    expect(unsafePattern({ patternProperties: { '^(a*)*b$': {} } })).toBe('^(a*)*b$');
    expect(unsafePattern({ anyOf: [{ pattern: '(' }] })).toBe('('); // not a regular expression at all
  });
});
