import { z } from 'zod';
import { defineTask, PayloadError, type TaskContext } from './sdk';

describe('defineTask', () => {
  const task = defineTask({
    payload: z.strictObject({ invoiceId: z.string(), amountCents: z.number().int().positive() }),
    run: async (payload) => payload.amountCents * 2,
  });
  const ctx = {} as TaskContext;

  it('hands the handler the parsed payload, and fails a bad one naming the field', async () => {
    await expect(task({ invoiceId: 'i-1', amountCents: 21 }, ctx)).resolves.toBe(42);
    await expect(task({ invoiceId: 'i-1', amountCents: -1 }, ctx)).rejects.toEqual(expect.objectContaining({ name: 'PayloadError', field: 'amountCents' }));
    await expect(task({ invoiceId: 'i-1' }, ctx)).rejects.toBeInstanceOf(PayloadError);
  });

  it('carries the JSON Schema its agent advertises', () => {
    expect(task.payloadJsonSchema).toMatchObject({
      type: 'object',
      properties: { invoiceId: { type: 'string' }, amountCents: { type: 'integer', exclusiveMinimum: 0 } },
      required: ['invoiceId', 'amountCents'],
      additionalProperties: false,
    });
  });
});
