import { MISFIRE_POLICIES, parseMisfirePolicy } from './misfire-policy';
import { ScheduleValidationError } from './schedule-validation-error';

function rejection(run: () => unknown): ScheduleValidationError {
  try {
    run();
  } catch (error: unknown) {
    if (error instanceof ScheduleValidationError) return error;
    throw error;
  }
  throw new Error('expected a ScheduleValidationError, but nothing was thrown');
}

describe('parseMisfirePolicy', () => {
  it('defaults to fire-once when absent', () => {
    expect(parseMisfirePolicy(undefined)).toBe('fire-once');
  });

  it.each(MISFIRE_POLICIES)('accepts %s', (policy) => {
    expect(parseMisfirePolicy(policy)).toBe(policy);
  });

  it('lists exactly the two policies', () => {
    expect(MISFIRE_POLICIES).toEqual(['fire-once', 'skip', 'catch-up']);
  });

  it.each([['SKIP'], ['fire_once'], [''], [null], [1], [['skip']], [{}]])('rejects %p naming the field', (value) => {
    const error = rejection(() => parseMisfirePolicy(value));
    expect(error.field).toBe('misfirePolicy');
    expect(error.message).toMatch(/^misfirePolicy must be "fire-once", "skip", "catch-up"; got /);
  });

  it('uses the field name it is given', () => {
    const error = rejection(() => parseMisfirePolicy('later', 'policy'));
    expect(error.field).toBe('policy');
    expect(error.message).toBe('policy must be "fire-once", "skip", "catch-up"; got "later"');
  });
});

describe('ScheduleValidationError', () => {
  it('is an Error with a name, a field and an optional cause', () => {
    const cause = new Error('inner');
    const error = new ScheduleValidationError('runAt', 'bad', { cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('ScheduleValidationError');
    expect(error.field).toBe('runAt');
    expect(error.message).toBe('bad');
    expect(error.cause).toBe(cause);
  });
});
