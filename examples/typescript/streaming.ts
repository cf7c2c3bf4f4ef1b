// Streaming and compaction types: events narrow by `type`. Compiled by `make test` (tsc).
import { agent, openai, memorySaver, ModelError, type AgentEvent } from 'resumable-agent';

const a = agent({
  model: openai({ apiKey: 'sk-…', model: 'gpt-4.1-mini' }),
  compaction: { maxBytes: 1_000_000, keepFirst: 1 },
});

let shown = '';
const show = (e: AgentEvent) => {
  if (e.type === 'text-delta') shown += e.text;
  if (e.type === 'tool-call-delta') console.log(e.toolName, e.inputDelta);
  if (e.type === 'step-restart') shown = '';
  if (e.type === 'compacted') console.log(`dropped ${e.removedMessages} messages (${e.removedBytes} bytes)`);
  // @ts-expect-error a text-delta has no inputDelta
  if (e.type === 'text-delta') console.log(e.inputDelta);
};

export async function run() {
  for await (const e of a.session(memorySaver(), 'chat').stream({ prompt: 'Hello' })) show(e);
  try {
    await a.prompt('Hello');
  } catch (e) {
    if (e instanceof ModelError && e.stopReason === 'max_tokens') console.log('cut:', e.text);
  }
  return shown;
}
