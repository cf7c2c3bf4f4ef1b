// The agent the provider tests use, in the test process and in the child process that resumes.
import { agent, defineTool, InterruptError, anthropic, openai, openaiResponses, gemini } from 'resumable-agent';

export function makeAgent(provider, baseURL, apiKey, extra = {}, agentExtra = {}) {
  const model = provider === 'anthropic'
    ? anthropic({ apiKey, model: 'claude-test', baseURL: `${baseURL}/anthropic`, maxTokens: 1024, ...extra })
    : provider === 'openai'
      ? openai({ apiKey, model: 'gpt-test', baseURL: `${baseURL}/openai`, ...extra })
      : provider === 'gemini'
        ? gemini({ apiKey, model: 'gemini-test', baseURL: `${baseURL}/gemini`, ...extra })
        : openaiResponses({ apiKey, model: 'gpt-test', baseURL: `${baseURL}/openai-responses`, reasoning: { effort: 'low', summary: 'auto' }, ...extra });
  return agent({
    instructions: 'Be brief.',
    model,
    ...agentExtra,
    tools: [
      defineTool({ name: 'lookup', description: 'Looks a key up.', schema: (s) => ({ key: s.string().required() }), handle: ({ key }) => ({ key, value: `v-${key}` }) }),
      defineTool({ name: 'ask_user', description: 'Asks the human.', schema: (s) => ({ question: s.string().required() }), handle: ({ question }) => { throw new InterruptError(question); } }),
    ],
  });
}
