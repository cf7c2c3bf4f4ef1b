// Tools and outputs written with Zod, Valibot and ArkType (Standard Schema): handle's input is typed from the
// schema's output, `structured` from the output schema. `tsc --noEmit` must accept it; the expected-error lines
// fail the check if the types degrade.
import { z } from 'zod';
import * as v from 'valibot';
import { toStandardJsonSchema } from '@valibot/to-json-schema';
import { type } from 'arktype';
import { agent, defineTool, isInterrupted, scriptedModel } from 'resumable-agent';

const weather = defineTool({
  name: 'weather',
  schema: z.object({ city: z.string(), days: z.number().int().optional() }),
  handle: ({ city, days }) => {
    const c: string = city;
    const d: number | undefined = days;
    // @ts-expect-error city is a string
    const n: number = city;
    return `${c} ${d ?? 1} ${n}`;
  },
});

const shout = defineTool({
  name: 'shout',
  schema: z.object({ word: z.string().transform((w) => w.length) }),
  // The validated value: the transform's output.
  handle: ({ word }) => word.toFixed(0),
});

const book = defineTool({
  name: 'book',
  schema: toStandardJsonSchema(v.object({ hotel: v.string(), nights: v.number() })),
  handle: ({ hotel, nights }) => `${hotel.toUpperCase()} for ${nights.toFixed(0)}`,
});

const pay = defineTool({
  name: 'pay',
  schema: type({ amount: 'number', 'note?': 'string' }),
  needsApproval: true,
  handle: ({ amount, note }) => `${amount.toFixed(2)} ${note ?? ''}`,
});

export async function plan(): Promise<string> {
  const planner = agent({ model: scriptedModel(['x']), tools: [weather, shout, book, pay], output: z.object({ city: z.string(), stars: z.number() }) });
  const r = await planner.prompt('plan');
  if (isInterrupted(r)) return r.question;
  const stars: number = r.structured.stars;
  // @ts-expect-error no such field in the output schema
  r.structured.rating;
  return `${r.structured.city} ${stars}`;
}
