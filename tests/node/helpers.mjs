// Shared helpers for the Node tests of the built package.
import assert from 'node:assert/strict';

/** Asserts every tool_use is answered by exactly one tool_result, in order, in the next user message. */
export function assertProviderValid(messages) {
  messages.forEach((m, i) => {
    const blocks = Array.isArray(m.content) ? m.content : [];
    const calls = blocks.filter((b) => b.type === 'tool_use').map((b) => b.id);
    if (calls.length === 0) return;
    const next = messages[i + 1];
    assert.ok(next, `messages[${i}] has unanswered tool calls`);
    assert.equal(next.role, 'user');
    const answered = next.content.filter((b) => b.type === 'tool_result').map((b) => b.toolUseId);
    assert.deepEqual(answered, calls, `messages[${i + 1}] must answer messages[${i}] in order`);
  });
}

/** A model that records (deep copies of) its requests, checks them, and plays a script. */
export function recordingModel(script) {
  const requests = [];
  let i = 0;
  const model = async (request) => {
    assertProviderValid(request.messages);
    requests.push(structuredClone(request));
    if (i >= script.length) throw new Error(`test script exhausted at call ${i + 1}`);
    const r = script[i++];
    return typeof r === 'function' ? r(request) : r;
  };
  return { model, requests };
}

export const toolUse = (id, name, input) => ({ type: 'tool_use', id, name, input });
export const turn = (...content) => ({ content });
export const text = (t) => ({ content: [{ type: 'text', text: t }] });
export const resultsOf = (message) => message.content.filter((b) => b.type === 'tool_result');
