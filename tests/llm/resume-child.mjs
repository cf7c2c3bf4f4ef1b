// Resumes a checkpoint file in a fresh process against llama-server, the tool choice left to the model:
//   node resume-child.mjs <provider> <base> <file> <answer>
import { readFileSync } from 'node:fs';
import { agent, defineTool, InterruptError, openai, openaiResponses, anthropic } from 'resumable-agent';

const [provider, base, file, answer] = process.argv.slice(2);
const model = {
  openai: () => openai({ baseURL: `${base}/v1`, model: 'smollm2', extraBody: { temperature: 0 }, maxTokens: 256, toolChoice: 'none' }),
  'openai-responses': () => openaiResponses({ baseURL: `${base}/v1`, model: 'smollm2', store: true, extraBody: { temperature: 0 }, maxTokens: 256, toolChoice: 'none' }),
  anthropic: () => anthropic({ apiKey: 'unused-locally', baseURL: base, model: 'smollm2', extraBody: { temperature: 0 }, maxTokens: 256, toolChoice: 'none' }),
}[provider]();
const lookup = defineTool({ name: 'lookup', description: 'Looks a key up in the table.', schema: (s) => ({ key: s.string().required() }), handle: ({ key }) => ({ key, value: `v-${key}` }) });
const ask = defineTool({ name: 'ask_user', description: 'Asks the human a question.', schema: (s) => ({ question: s.string().required() }), handle: ({ question }) => { throw new InterruptError(question); } });
const result = await agent({ model, tools: [lookup, ask] }).resume(readFileSync(file, 'utf8'), answer);
process.stdout.write(JSON.stringify(result));
