// Structured output: the answer's type is inferred from the builder schema. Compiled by `make test` (tsc).
import { agent, scriptedModel, isInterrupted, OutputError, type AgentResponse } from 'resumable-agent';

const cities = agent({
  model: scriptedModel([
    { content: [{ type: 'tool_use', id: 'f1', name: 'final_answer', input: { city: 'Paris', population: 2102650 } }] },
  ]),
  output: (s) => ({ city: s.string().required(), population: s.integer().required(), nickname: s.string() }),
});

const result = await cities.prompt('The capital of France, and how many live there?');
if (!isInterrupted(result)) {
  const city: string = result.structured.city;
  const population: number = result.structured.population;
  const nickname: string | undefined = result.structured.nickname;
  // @ts-expect-error population is a number, not a string
  const wrong: string = result.structured.population;
  console.log(city, population, nickname, wrong);
}

// A field schema: the answer is that field's type.
const verdict = agent({ model: scriptedModel(['yes']), output: (s) => s.enum(['yes', 'no'] as const) });
const v = await verdict.prompt('Ship it?');
if (!isInterrupted(v)) {
  const answer: 'yes' | 'no' = v.structured;
  console.log(answer);
}

// A JSON Schema: the answer is unknown until checked.
const loose = agent({ model: scriptedModel(['{"ok": true}']), output: { type: 'object', properties: { ok: { type: 'boolean' } } } });
const l: AgentResponse<unknown> | unknown = await loose.prompt('ok?');
console.log(l);

try {
  await cities.prompt('again');
} catch (e) {
  if (e instanceof OutputError) console.log(e.attempts, e.problem, e.checkpoint.messages.length);
}
