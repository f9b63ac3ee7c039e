/**
 * The one error this package throws for bad input. `field` names the request
 * field at fault ('schedule', 'runAt', 'timezone', 'misfirePolicy', or whatever
 * name the caller passed), so the API edge can report it without parsing text.
 */
export class ScheduleValidationError extends Error {
  override readonly name = 'ScheduleValidationError';
  readonly field: string;

  constructor(field: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.field = field;
  }
}
