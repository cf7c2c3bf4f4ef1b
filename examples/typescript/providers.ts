// The providers' options and what they put in a checkpoint, as types. Compiled by `make test` (tsc); nothing
// here calls a network.
import { agent, anthropic, gemini, openai, openaiResponses, workersAI, ModelError, type AiBindingLike, type MessageContent } from 'resumable-agent';

export const reasoning = openaiResponses({ apiKey: 'sk-…', model: 'gpt-5-mini', reasoning: { effort: 'low', summary: 'auto' }, toolChoice: 'auto' });
export const stored = openaiResponses({ apiKey: 'sk-…', model: 'gpt-5-mini', store: true, extraBody: { parallel_tool_calls: false } });
export const flash = gemini({ apiKey: 'AIza…', model: 'gemini-2.5-flash', thinking: { budgetTokens: 1024 }, extraBody: { generationConfig: { temperature: 0.2 } } });
export const pro = gemini({ apiKey: 'AIza…', model: 'gemini-3-pro', thinking: { level: 'high' }, toolChoice: { name: 'lookup' } });
export const forced = anthropic({ apiKey: 'sk-ant-…', model: 'claude-sonnet-4-5', toolChoice: 'required', extraBody: { metadata: { user_id: 'u-1' } } });
export const local = openai({ baseURL: 'http://127.0.0.1:8080/v1', model: 'smollm2', toolChoice: 'required' });
export const onWorkers = (ai: AiBindingLike) => workersAI(ai, { model: '@cf/meta/llama-3.3-70b-instruct-fp8-fast', toolChoice: 'auto' });

// @ts-expect-error Gemini takes a budget or a level
gemini({ apiKey: 'AIza…', model: 'gemini-3-pro', thinking: { level: 'max' } });
// @ts-expect-error the Responses API's effort names
openaiResponses({ model: 'gpt-5-mini', reasoning: { effort: 'extreme' } });
// @ts-expect-error toolChoice names a tool with { name }
openai({ model: 'gpt-4.1-mini', toolChoice: { tool: 'lookup' } });

/** What a provider keeps in a checkpoint to send back: reasoning items and signatures. */
export function carried(content: MessageContent[]): string[] {
  return content.flatMap((b) => {
    if (b.type === 'reasoning') return [`${b.id}: ${b.summary.join(' ')} (${b.encryptedContent ? 'encrypted' : 'stored'})`];
    if ((b.type === 'text' || b.type === 'tool_use') && b.signature) return [`signed ${b.type}`];
    return [];
  });
}

export async function run() {
  try {
    return await agent({ model: flash }).prompt('Hello');
  } catch (e) {
    if (e instanceof ModelError && (e.stopReason === 'recitation' || e.stopReason === 'prompt_blocked')) {
      console.log(e.stopReason, e.usage?.inputTokens);
    }
    throw e;
  }
}
