#!/usr/bin/env node
// An agent with an SDK task whose handler declares its payload schema
// (defineTask), as a real process, for the payload-schema tests. Configured by
// the agent's usual KAIROS_* variables, plus:
//   SDK_TASK    the task name (default send-invoice)
//   SDK_SCHEMA  which schema it declares: v1 (invoiceId, amountCents), v2
//               (invoiceId, amount: a rollout renamed the field), or unsafe
//               (a regular expression that could take exponential time)
'use strict';
const { z } = require('zod');
const { agentOptionsFromEnv, defineTask, startAgent } = require('@kairos/agent');

const schemas = {
  v1: z.strictObject({ invoiceId: z.uuid(), amountCents: z.number().int().positive(), currency: z.enum(['EUR', 'USD']).optional() }),
  v2: z.strictObject({ invoiceId: z.uuid(), amount: z.number().positive() }),
  unsafe: z.object({ code: z.string().regex(/^(a+)+$/) }),
};
const schema = schemas[process.env.SDK_SCHEMA || 'v1'];
if (schema === undefined) throw new Error(`unknown SDK_SCHEMA ${process.env.SDK_SCHEMA}`);
const task = process.env.SDK_TASK || 'send-invoice';
const handlers = { [task]: defineTask({ payload: schema, run: async () => undefined }) };

startAgent(agentOptionsFromEnv(process.env, { handlers, tasks: [task] })).then((agent) => {
  process.once('SIGTERM', () => void agent.close().then(() => process.exit(0)));
});
