import { Metadata, status } from '@grpc/grpc-js';
import { KairosError, KairosErrorCode } from './error';

function serviceError(code: status, details: string, metadata = new Metadata()): Error {
  return Object.assign(new Error(`${code} ${status[code]}: ${details}`), { code, details, metadata });
}

describe('KairosError.from', () => {
  it('returns a KairosError unchanged', () => {
    const original = new KairosError(KairosErrorCode.NotFound, 'gone', { field: 'jobId' });
    expect(KairosError.from(original)).toBe(original);
  });

  it('uses the status details as the message and the kairos-field trailer as the field', () => {
    const metadata = new Metadata();
    metadata.set('kairos-field', 'payload');
    const cause = serviceError(status.INVALID_ARGUMENT, 'payload too large', metadata);
    const error = KairosError.from(cause);
    expect(error).toMatchObject({ code: 'invalid-argument', message: 'payload too large', field: 'payload', cause });
    expect(error.name).toBe('KairosError');
    expect(error).toBeInstanceOf(Error);
  });

  it('falls back to the status name when there are no details', () => {
    expect(KairosError.from(serviceError(status.UNAVAILABLE, '')).message).toBe('UNAVAILABLE');
  });

  it.each([
    [status.DEADLINE_EXCEEDED, 'deadline-exceeded'],
    [status.OUT_OF_RANGE, 'invalid-argument'],
    [status.ABORTED, 'aborted'],
    [status.UNIMPLEMENTED, 'internal'],
    [status.DATA_LOSS, 'internal'],
    [status.CANCELLED, 'unknown'],
    [status.UNKNOWN, 'unknown'],
  ] as const)('maps status %i to %s', (code, expected) => {
    expect(KairosError.from(serviceError(code, 'x')).code).toBe(expected);
  });

  it('wraps other errors and non-errors as unknown', () => {
    const plain = new Error('boom');
    expect(KairosError.from(plain)).toMatchObject({ code: 'unknown', message: 'boom', cause: plain });
    expect(KairosError.from('text')).toMatchObject({ code: 'unknown', message: 'text', cause: 'text' });
  });
});
