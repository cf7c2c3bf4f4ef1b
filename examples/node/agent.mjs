// The agent used by every step of the demo. Nothing here survives between processes except checkpoint.json.
import { defineTool, InterruptError, scriptedModel } from 'resumable-agent';

const askUser = defineTool({
  name: 'ask_user',
  description: 'Ask the human a clarifying question before continuing.',
  schema: (s) => ({ question: s.string().required() }),
  handle: ({ question }) => {
    throw new InterruptError(question);
  },
});

const estimate = defineTool({
  name: 'estimate',
  description: 'Estimate the weeks a list of tasks takes.',
  schema: (s) => ({ tasks: s.array(s.string()).required() }),
  handle: ({ tasks }) => ({ weeks: tasks.length * 2, tasks }),
});

/** The content of the tool result answering call `id`. */
function answerTo(request, id) {
  for (const m of request.messages) {
    if (!Array.isArray(m.content)) continue;
    for (const b of m.content) if (b.type === 'tool_result' && b.toolUseId === id) return b.content;
  }
  throw new Error(`no result for ${id}`);
}

// A scripted stand-in for a real model. scriptedModel picks each turn from the conversation it is shown,
// not from a counter in memory, so it answers the same in whichever process resumes the run.
const model = scriptedModel([
  { content: [{ type: 'text', text: 'Let me find out what we are building.' },
    { type: 'tool_use', id: 'call_1', name: 'ask_user', input: { question: 'What are you building?' } }],
    usage: { inputTokens: 100, outputTokens: 20 } },
  (req) => ({ content: [
    { type: 'tool_use', id: 'call_2', name: 'estimate', input: { tasks: ['design', 'build', 'test', answerTo(req, 'call_1')] } },
    { type: 'tool_use', id: 'call_3', name: 'ask_user', input: { question: 'What is your deadline?' } }],
    usage: { inputTokens: 200, outputTokens: 20 } }),
  (req) => ({ content: [{ type: 'text', text:
    `Plan for "${answerTo(req, 'call_1')}": ${JSON.parse(answerTo(req, 'call_2')).weeks} weeks of work, due ${answerTo(req, 'call_3')}.` }],
    usage: { inputTokens: 300, outputTokens: 20 } }),
]);

export const agentConfig = {
  instructions: 'You are a helpful planner. Ask the user for any missing information.',
  tools: [askUser, estimate],
  model,
};
