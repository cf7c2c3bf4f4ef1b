// A strict stand-in for the Anthropic Messages API and OpenAI Chat Completions, on 127.0.0.1 only.
// Every request is checked against the wire format; a violation is answered with a 400 in the provider's
// error shape AND recorded, so a test can assert there were none. Answers follow the documented shapes.
//
// The scenario is named by the first user message ("scenario:<name>"); the turn is the number of
// assistant messages already in the request (the same conversation-keyed scripting the library uses).
//
//   node server.mjs          prints {"port": N} on its first line, then serves until killed
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';

export const API_KEY = 'sk-test-6f1c2a9be0d44c1f8a7e-SECRET';

function fail(errors, where, problem) {
  errors.push(`${where}: ${problem}`);
  throw new Error(`${where}: ${problem}`);
}

// ---- Anthropic -------------------------------------------------------------------------------------------

function checkAnthropic(req, body, errors) {
  const w = 'anthropic';
  if (req.headers['x-api-key'] !== API_KEY) fail(errors, w, 'x-api-key header missing or wrong');
  if (req.headers['anthropic-version'] !== '2023-06-01') fail(errors, w, `anthropic-version is ${req.headers['anthropic-version']}`);
  if (!String(req.headers['content-type']).startsWith('application/json')) fail(errors, w, 'content-type is not JSON');
  if (typeof body.model !== 'string' || !body.model) fail(errors, w, 'model missing');
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) fail(errors, w, 'max_tokens missing');
  if (body.system !== undefined && typeof body.system !== 'string') fail(errors, w, 'system must be a string');
  if (body.thinking !== undefined) {
    const t = body.thinking;
    if (t.type !== 'enabled' || !Number.isInteger(t.budget_tokens) || t.budget_tokens < 1024 || t.budget_tokens >= body.max_tokens) {
      fail(errors, w, `thinking must be { type: "enabled", budget_tokens >= 1024 and < max_tokens }, got ${JSON.stringify(t)}`);
    }
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) fail(errors, w, 'messages missing');
  if (body.messages[0].role !== 'user') fail(errors, w, 'the first message must be from the user');
  for (const t of body.tools ?? []) {
    if (!t.name || typeof t.description !== 'string' || t.input_schema?.type !== 'object') fail(errors, w, `bad tool ${JSON.stringify(t)}`);
  }
  if (body.tool_choice !== undefined) {
    // Anthropic: { type: auto | any | none | tool (with name) }, only with tools; with thinking only auto/none.
    const c = body.tool_choice;
    const ok = ['auto', 'any', 'none'].includes(c?.type) ? Object.keys(c).length === 1 : c?.type === 'tool' && typeof c.name === 'string' && Object.keys(c).length === 2;
    if (!ok) fail(errors, w, `bad tool_choice ${JSON.stringify(c)}`);
    if (!body.tools?.length) fail(errors, w, 'tool_choice without tools');
    if (c.type === 'tool' && !body.tools.some((t) => t.name === c.name)) fail(errors, w, `tool_choice names ${c.name}, not a tool`);
    if (body.thinking && ['any', 'tool'].includes(c.type)) fail(errors, w, 'tool_choice forces a tool with thinking on');
  }
  body.messages.forEach((m, i) => {
    if (!['user', 'assistant'].includes(m.role)) fail(errors, w, `messages[${i}].role ${m.role}`);
    const blocks = typeof m.content === 'string' ? [] : m.content;
    if (typeof m.content !== 'string' && !Array.isArray(m.content)) fail(errors, w, `messages[${i}].content`);
    // Anthropic: "all messages must have non-empty content" (but an optional final assistant one), and a
    // text block must be non-empty.
    if (m.content === '' || (Array.isArray(m.content) && m.content.length === 0)) fail(errors, w, `messages[${i}] has empty content`);
    if (blocks.some((b) => b.type === 'text' && b.text === '')) fail(errors, w, `messages[${i}] has an empty text block`);
    for (const b of blocks.filter((x) => x.type === 'thinking' || x.type === 'redacted_thinking')) {
      if (m.role !== 'assistant') fail(errors, w, `messages[${i}] thinking outside an assistant message`);
      if (b.type === 'thinking' && (typeof b.thinking !== 'string' || typeof b.signature !== 'string')) fail(errors, w, `messages[${i}] bad thinking block`);
      if (b.type === 'redacted_thinking' && typeof b.data !== 'string') fail(errors, w, `messages[${i}] bad redacted_thinking block`);
    }
    const calls = blocks.filter((b) => b.type === 'tool_use');
    for (const c of calls) {
      if (m.role !== 'assistant' || !c.id || !c.name || typeof c.input !== 'object' || c.input === null || Array.isArray(c.input)) {
        fail(errors, w, `messages[${i}] bad tool_use ${JSON.stringify(c)}`);
      }
    }
    const results = blocks.filter((b) => b.type === 'tool_result');
    for (const r of results) {
      if (m.role !== 'user' || typeof r.tool_use_id !== 'string' || typeof r.content !== 'string') fail(errors, w, `messages[${i}] bad tool_result`);
      if (r.toolUseId !== undefined || r.isError !== undefined) fail(errors, w, `messages[${i}] camelCase leaked into the wire format`);
    }
    if (calls.length) {
      const next = body.messages[i + 1];
      if (!next) fail(errors, w, `messages[${i}] tool_use without a following tool_result message`);
      const answered = (Array.isArray(next.content) ? next.content : []).filter((b) => b.type === 'tool_result').map((b) => b.tool_use_id);
      if (JSON.stringify(answered) !== JSON.stringify(calls.map((c) => c.id))) {
        fail(errors, w, `messages[${i + 1}] must answer ${calls.map((c) => c.id)} in order, answers ${answered}`);
      }
    }
    if (results.length && !(body.messages[i - 1]?.content ?? []).some?.((b) => b.type === 'tool_use')) fail(errors, w, `messages[${i}] orphan tool_result`);
  });
}

const anthropicMessage = (content, turn, stop) => ({
  id: `msg_01${turn}ABCDEFG`, type: 'message', role: 'assistant', model: 'claude-test', content,
  stop_reason: stop, stop_sequence: null,
  usage: { input_tokens: 100 * (turn + 1), output_tokens: 10 + turn, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
});

// ---- OpenAI ------------------------------------------------------------------------------------------------

function checkOpenAi(req, body, errors) {
  const w = 'openai';
  if (req.headers.authorization !== `Bearer ${API_KEY}`) fail(errors, w, 'authorization header missing or wrong');
  if (typeof body.model !== 'string' || !body.model) fail(errors, w, 'model missing');
  if (!Array.isArray(body.messages) || body.messages.length === 0) fail(errors, w, 'messages missing');
  for (const t of body.tools ?? []) {
    if (t.type !== 'function' || !t.function?.name || t.function.parameters?.type !== 'object') fail(errors, w, `bad tool ${JSON.stringify(t)}`);
  }
  if (body.tool_choice !== undefined) {
    // OpenAI: 'none' | 'auto' | 'required' | { type: 'function', function: { name } }; "tool_choice is only
    // allowed when tools are specified".
    const c = body.tool_choice;
    const named = c?.type === 'function' && typeof c.function?.name === 'string' && Object.keys(c).length === 2 && Object.keys(c.function).length === 1;
    if (!['none', 'auto', 'required'].includes(c) && !named) fail(errors, w, `bad tool_choice ${JSON.stringify(c)}`);
    if (!body.tools?.length) fail(errors, w, 'tool_choice without tools');
    if (named && !body.tools.some((t) => t.function.name === c.function.name)) fail(errors, w, `tool_choice names ${c.function.name}, not a tool`);
  }
  body.messages.forEach((m, i) => {
    if (!['system', 'user', 'assistant', 'tool'].includes(m.role)) fail(errors, w, `messages[${i}].role ${m.role}`);
    if (m.role === 'assistant' && !m.tool_calls?.length && (m.content === null || m.content === undefined || m.content === '')) {
      fail(errors, w, `messages[${i}] an assistant message needs content or tool_calls`);
    }
    // OpenAI's schema allows null content beside tool_calls, but llama-cpp-python answers it with a 500:
    // a string is what every server takes.
    if (m.role === 'assistant' && typeof m.content !== 'string') fail(errors, w, `messages[${i}] assistant content must be a string (null is refused by some servers)`);
    if (m.role === 'assistant' && m.tool_calls) {
      m.tool_calls.forEach((c) => {
        if (!c.id || c.type !== 'function' || !c.function?.name || typeof c.function.arguments !== 'string') fail(errors, w, `messages[${i}] bad tool_call`);
      });
      const next = body.messages.slice(i + 1, i + 1 + m.tool_calls.length);
      const ids = next.map((n) => (n.role === 'tool' ? n.tool_call_id : null));
      if (JSON.stringify(ids) !== JSON.stringify(m.tool_calls.map((c) => c.id))) fail(errors, w, `messages[${i}] tool_calls must be answered by tool messages in order, got ${ids}`);
    }
    if (m.role === 'tool') {
      if (typeof m.content !== 'string' || !m.tool_call_id) fail(errors, w, `messages[${i}] bad tool message`);
      const owner = body.messages.slice(0, i).reverse().find((p) => p.role !== 'tool');
      if (!owner?.tool_calls?.some((c) => c.id === m.tool_call_id)) fail(errors, w, `messages[${i}] orphan tool message`);
    }
  });
}

const openAiCompletion = (message, turn, finish) => ({
  id: `chatcmpl-${turn}abc`, object: 'chat.completion', created: 1700000000 + turn, model: 'gpt-test',
  choices: [{ index: 0, message: { role: 'assistant', refusal: null, ...message }, logprobs: null, finish_reason: finish }],
  usage: { prompt_tokens: 100 * (turn + 1), completion_tokens: 10 + turn, total_tokens: 110 * (turn + 1) + turn },
});

// ---- OpenAI Responses ------------------------------------------------------------------------------------

const RESPONSES_FIELDS = ['model', 'input', 'instructions', 'tools', 'tool_choice', 'max_output_tokens', 'store', 'include', 'reasoning', 'stream',
  // what the extraBody test sends
  'temperature', 'parallel_tool_calls'];

/** The input items, split into turns: a user turn (messages, function_call_output items) or an assistant one. */
function responsesTurns(input) {
  const turns = [];
  for (const item of input) {
    const side = item.role === 'assistant' || item.type === 'function_call' || item.type === 'reasoning' ? 'assistant' : 'user';
    if (turns.at(-1)?.side !== side) turns.push({ side, items: [] });
    turns.at(-1).items.push(item);
  }
  return turns;
}

/** Checked against the CreateResponse request of OpenAI's API reference, items as the API takes them back. */
function checkResponses(req, body, errors) {
  const w = 'openai-responses';
  if (req.headers.authorization !== `Bearer ${API_KEY}`) fail(errors, w, 'authorization header missing or wrong');
  for (const k of Object.keys(body)) if (!RESPONSES_FIELDS.includes(k)) fail(errors, w, `unexpected field ${k}`);
  if (typeof body.model !== 'string' || !body.model) fail(errors, w, 'model missing');
  if (!Array.isArray(body.input) || body.input.length === 0) fail(errors, w, 'input missing');
  if (body.instructions !== undefined && typeof body.instructions !== 'string') fail(errors, w, 'instructions must be a string');
  if (typeof body.store !== 'boolean') fail(errors, w, 'store must be sent (the API default is true)');
  if (body.store === false && !body.include?.includes('reasoning.encrypted_content')) fail(errors, w, 'store: false without include: ["reasoning.encrypted_content"] loses the reasoning');
  if (body.reasoning !== undefined) {
    const r = body.reasoning;
    if (r.effort !== undefined && !['none', 'minimal', 'low', 'medium', 'high', 'xhigh'].includes(r.effort)) fail(errors, w, `reasoning.effort ${r.effort}`);
    if (r.summary !== undefined && !['auto', 'concise', 'detailed'].includes(r.summary)) fail(errors, w, `reasoning.summary ${r.summary}`);
  }
  for (const t of body.tools ?? []) {
    const keys = Object.keys(t).sort().join();
    if (t.type !== 'function' || !t.name || typeof t.description !== 'string' || t.parameters?.type !== 'object' || typeof t.strict !== 'boolean' || keys !== 'description,name,parameters,strict,type') {
      fail(errors, w, `bad tool ${JSON.stringify(t)}`);
    }
  }
  if (body.tool_choice !== undefined) {
    const c = body.tool_choice;
    const named = c?.type === 'function' && typeof c.name === 'string' && Object.keys(c).length === 2;
    if (!['none', 'auto', 'required'].includes(c) && !named) fail(errors, w, `bad tool_choice ${JSON.stringify(c)}`);
    if (!body.tools?.length) fail(errors, w, 'tool_choice without tools');
    if (named && !body.tools.some((t) => t.name === c.name)) fail(errors, w, `tool_choice names ${c.name}, not a tool`);
  }
  const calls = new Map();
  body.input.forEach((item, i) => {
    const at = `input[${i}]`;
    if (item.role !== undefined) {
      if (!['user', 'assistant', 'system', 'developer'].includes(item.role) || (item.type !== undefined && item.type !== 'message')) fail(errors, w, `${at} bad message`);
      if (item.role === 'assistant' && (typeof item.content !== 'string' || item.content === '')) fail(errors, w, `${at} an assistant message's content must be non-empty text`);
      if (Array.isArray(item.content)) {
        for (const part of item.content) {
          const ok = (part.type === 'input_text' && typeof part.text === 'string') || (part.type === 'input_image' && typeof part.image_url === 'string' && ['low', 'high', 'auto'].includes(part.detail));
          if (!ok) fail(errors, w, `${at} bad content part ${JSON.stringify(part)}`);
        }
      } else if (typeof item.content !== 'string') fail(errors, w, `${at} content must be text or input parts`);
    } else if (item.type === 'function_call') {
      if (!item.call_id || !item.name || typeof item.arguments !== 'string') fail(errors, w, `${at} bad function_call`);
      calls.set(item.call_id, false);
    } else if (item.type === 'function_call_output') {
      if (typeof item.call_id !== 'string' || typeof item.output !== 'string') fail(errors, w, `${at} bad function_call_output`);
      if (calls.get(item.call_id) !== false) fail(errors, w, `${at} output for ${item.call_id}: no call before it, or answered twice`);
      calls.set(item.call_id, true);
    } else if (item.type === 'reasoning') {
      if (!item.id || !Array.isArray(item.summary) || item.summary.some((x) => x.type !== 'summary_text' || typeof x.text !== 'string')) fail(errors, w, `${at} bad reasoning item`);
      if (body.store === false && typeof item.encrypted_content !== 'string') fail(errors, w, `${at} a reasoning item without encrypted_content under store: false`);
      const next = body.input[i + 1];
      if (!(next?.type === 'function_call' || next?.role === 'assistant' || next?.type === 'reasoning')) fail(errors, w, `${at} reasoning was provided without its required following item`);
    } else fail(errors, w, `${at} unknown item ${JSON.stringify(item)}`);
  });
  for (const [id, answered] of calls) if (!answered) fail(errors, w, `function_call ${id} has no function_call_output`);
}

const responsesBody = (output, turn, status = 'completed', reason = null) => ({
  id: `resp_${turn}abc`, object: 'response', created_at: 1700000000 + turn, status, model: 'gpt-test', output,
  incomplete_details: reason ? { reason } : null, error: null, store: false,
  usage: { input_tokens: 100 * (turn + 1), input_tokens_details: { cached_tokens: 0 }, output_tokens: 10 + turn, output_tokens_details: { reasoning_tokens: 4 }, total_tokens: 110 * (turn + 1) + turn },
});
/** The reasoning item the server gives at `turn` (final form: what `.added` streams first differs). */
const reasoningItem = (turn) => ({ type: 'reasoning', id: `rs_${turn}abc`, summary: [{ type: 'summary_text', text: `Weighing turn ${turn}.` }], encrypted_content: `gAAAAB-enc-${turn}-final` });
const messageItem = (turn, part) => ({ type: 'message', id: `msg_${turn}abc`, status: 'completed', role: 'assistant', content: [part] });
const textItem = (text, turn) => messageItem(turn, { type: 'output_text', text, annotations: [] });
const callItem = (turn, k, name, args) => ({ type: 'function_call', id: `fc_${turn}${k}abc`, call_id: `call_${turn}${k}abc`, name, arguments: args, status: 'completed' });

/**
 * Each earlier assistant turn that called tools must start with the reasoning item the server gave it,
 * exactly (the encrypted reasoning of `.done`, not `.added`).
 */
function checkReasoningBack(body, errors) {
  if (body.store !== false) return;
  responsesTurns(body.input).filter((t) => t.side === 'assistant').forEach((t, turn) => {
    if (!t.items.some((x) => x.type === 'function_call')) return;
    const { id, summary, encrypted_content } = reasoningItem(turn);
    if (!isDeepStrictEqual(t.items[0], { type: 'reasoning', id, summary, encrypted_content })) {
      errors.push(`openai-responses: turn ${turn}'s reasoning not sent back as given before its calls: ${JSON.stringify(t.items[0])}`);
    }
  });
}

// ---- Gemini ------------------------------------------------------------------------------------------------

const GEMINI_FIELDS = ['contents', 'systemInstruction', 'tools', 'toolConfig', 'generationConfig', 'safetySettings'];
const PART_DATA = ['text', 'inlineData', 'fileData', 'functionCall', 'functionResponse'];

/** Checked against the GenerateContentRequest of Google's API reference. */
function checkGemini(req, body, errors) {
  const w = 'gemini';
  if (req.headers['x-goog-api-key'] !== API_KEY) fail(errors, w, 'x-goog-api-key header missing or wrong');
  if (req.url.includes('key=')) fail(errors, w, 'the key is in the URL');
  for (const k of Object.keys(body)) if (!GEMINI_FIELDS.includes(k)) fail(errors, w, `unexpected field ${k}`);
  if (!Array.isArray(body.contents) || body.contents.length === 0) fail(errors, w, 'contents missing');
  if (body.systemInstruction !== undefined && !(Array.isArray(body.systemInstruction.parts) && body.systemInstruction.parts.every((p) => typeof p.text === 'string'))) fail(errors, w, 'bad systemInstruction');
  for (const t of body.tools ?? []) {
    for (const f of t.functionDeclarations ?? []) {
      if (!f.name || typeof f.description !== 'string' || f.parametersJsonSchema?.type !== 'object' || f.parameters !== undefined) fail(errors, w, `bad function declaration ${JSON.stringify(f)}`);
    }
  }
  if (body.toolConfig !== undefined) {
    const c = body.toolConfig.functionCallingConfig;
    if (!['AUTO', 'ANY', 'NONE'].includes(c?.mode)) fail(errors, w, `bad toolConfig ${JSON.stringify(body.toolConfig)}`);
    if (!body.tools?.length) fail(errors, w, 'toolConfig without tools');
    const names = body.tools.flatMap((t) => t.functionDeclarations.map((f) => f.name));
    if (c.allowedFunctionNames && (c.mode !== 'ANY' || !c.allowedFunctionNames.every((n) => names.includes(n)))) fail(errors, w, `bad allowedFunctionNames ${JSON.stringify(c)}`);
  }
  const g = body.generationConfig;
  if (g?.thinkingConfig && (g.thinkingConfig.thinkingBudget !== undefined) === (g.thinkingConfig.thinkingLevel !== undefined)) fail(errors, w, 'thinkingConfig takes a budget or a level');
  if (g?.thinkingConfig?.thinkingLevel !== undefined && !['MINIMAL', 'LOW', 'MEDIUM', 'HIGH', 'XHIGH'].includes(g.thinkingConfig.thinkingLevel)) fail(errors, w, `thinkingLevel ${g.thinkingConfig.thinkingLevel} is not one of the API's enum names`);
  if (body.contents[0].role !== 'user') fail(errors, w, 'the first content must be the user\'s');
  body.contents.forEach((c, i) => {
    if (!['user', 'model'].includes(c.role)) fail(errors, w, `contents[${i}].role ${c.role}`);
    if (!Array.isArray(c.parts) || c.parts.length === 0) fail(errors, w, `contents[${i}] has no parts`);
    c.parts.forEach((p, j) => {
      const data = PART_DATA.filter((k) => p[k] !== undefined);
      if (data.length !== 1) fail(errors, w, `contents[${i}].parts[${j}] must hold exactly one of ${PART_DATA}: ${JSON.stringify(p)}`);
      if (p.thoughtSignature !== undefined && (c.role !== 'model' || typeof p.thoughtSignature !== 'string')) fail(errors, w, `contents[${i}].parts[${j}] bad thoughtSignature`);
      if (p.functionCall && (c.role !== 'model' || !p.functionCall.name || typeof p.functionCall.args !== 'object' || Array.isArray(p.functionCall.args))) fail(errors, w, `contents[${i}].parts[${j}] bad functionCall`);
      if (p.functionResponse && (c.role !== 'user' || !p.functionResponse.name || typeof p.functionResponse.response !== 'object' || Array.isArray(p.functionResponse.response) || p.functionResponse.response === null)) {
        fail(errors, w, `contents[${i}].parts[${j}] bad functionResponse (response must be an object)`);
      }
    });
    const calls = c.parts.filter((p) => p.functionCall).map((p) => p.functionCall.name);
    if (calls.length) {
      const answers = (body.contents[i + 1]?.parts ?? []).filter((p) => p.functionResponse).map((p) => p.functionResponse.name);
      if (JSON.stringify(answers) !== JSON.stringify(calls)) fail(errors, w, `contents[${i + 1}] must answer ${calls} in order, answers ${answers}`);
    }
  });
}

const geminiBody = (parts, turn, finish = 'STOP') => ({
  candidates: [{ content: { role: 'model', parts }, finishReason: finish, index: 0 }],
  usageMetadata: { promptTokenCount: 100 * (turn + 1), candidatesTokenCount: 8 + turn, thoughtsTokenCount: 2, totalTokenCount: 110 * (turn + 1) + turn },
  modelVersion: 'gemini-test', responseId: `gemresp${turn}`,
});

/** A scripted step as Gemini parts: the first call of a turn signed, or else an empty signed text at the end. */
function geminiParts(step, turn) {
  const parts = [];
  if (step.text) parts.push({ text: step.text });
  (step.calls ?? []).forEach(([name, args], k) => parts.push({ functionCall: { name, args: typeof args === 'string' ? {} : args }, ...(k === 0 ? { thoughtSignature: `sig-call-${turn}` } : {}) }));
  if (!step.calls?.length) parts.push({ text: '', thoughtSignature: `sig-end-${turn}` });
  return parts;
}

/** Every signature given comes back on the part it came on (the first call of a turn: Gemini refuses the turn without it). */
function checkSignaturesBack(body, errors) {
  body.contents.filter((c) => c.role === 'model').forEach((c, turn) => {
    const calls = c.parts.filter((p) => p.functionCall);
    if (calls.length && calls[0].thoughtSignature !== `sig-call-${turn}`) errors.push(`gemini: turn ${turn}'s first call came back without its signature: ${JSON.stringify(c.parts)}`);
    if (calls.slice(1).some((p) => p.thoughtSignature !== undefined)) errors.push(`gemini: turn ${turn}: a signature moved to another call`);
    const texts = c.parts.filter((p) => p.text !== undefined && p.thoughtSignature);
    if (texts.some((p) => p.thoughtSignature !== `sig-end-${turn}` || p.text !== '')) errors.push(`gemini: turn ${turn}: a text signature moved: ${JSON.stringify(c.parts)}`);
  });
}

function geminiStop(scenario, n, turn) {
  switch (scenario) {
    case 'cut':
    case 'alwaysmax':
      if (n > 1 && scenario === 'cut') return geminiBody(geminiParts({ text: 'Complete answer.' }, turn), turn);
      return geminiBody([{ text: 'Let me look' }, { functionCall: { name: 'lookup', args: {} }, thoughtSignature: `sig-call-${turn}` }], turn, 'MAX_TOKENS');
    case 'refusal':
      return geminiBody([{ text: 'I cannot help with that.' }], turn, 'RECITATION');
    case 'filter':
      return { promptFeedback: { blockReason: 'SAFETY' }, usageMetadata: { promptTokenCount: 7, totalTokenCount: 7 }, modelVersion: 'gemini-test', responseId: `gemresp${turn}` };
    case 'empty':
    case 'emptytext':
      if (n > 1) return geminiBody(geminiParts({ text: 'After an empty answer.' }, turn), turn);
      return geminiBody(scenario === 'empty' ? [] : [{ text: '' }], turn);
    default: return null;
  }
}

/** A Gemini body as its stream: texts in pieces, each call whole in a chunk of its own, the finish and usage last. */
function geminiFrames(resp) {
  const chunk = (parts, extra = {}) => ({ candidates: [{ content: { role: 'model', parts }, index: 0, ...extra }], modelVersion: resp.modelVersion, responseId: resp.responseId });
  if (!resp.candidates) return [[null, resp]];
  const { parts } = resp.candidates[0].content;
  const frames = [];
  for (const p of parts) {
    if (p.text !== undefined && p.text !== '') {
      const bits = pieces(p.text);
      bits.forEach((t, k) => frames.push([null, chunk([{ text: t, ...(k === bits.length - 1 && p.thoughtSignature ? { thoughtSignature: p.thoughtSignature } : {}) }]), 'text']));
    } else frames.push([null, chunk([p]), p.functionCall ? 'args' : undefined]);
  }
  frames.push([null, { ...chunk([]), candidates: [{ content: { role: 'model', parts: [] }, finishReason: resp.candidates[0].finishReason, index: 0 }], usageMetadata: resp.usageMetadata }]);
  return frames;
}

// ---- scenarios ---------------------------------------------------------------------------------------------

/** What the model "does" at `turn` of `scenario`, provider-neutral. */
function script(scenario, turn, toolTexts) {
  switch (scenario) {
    case 'text': return { text: 'Hello from the model.' };
    case 'thinking': return { text: 'No thinking here.' };
    case 'cutstream':
    case 'alwayscut':
      return { text: 'A streamed answer that arrives whole.' };
    case 'cutargs':
      return turn === 0 ? { text: 'Looking it up.', calls: [['lookup', { key: 'a' }]] } : { text: `Found ${toolTexts.at(-1)}.` };
    case 'structured': // an answer missing a required field, then the corrected one
      return turn === 0 ? { calls: [['final_answer', { city: 'Paris' }]] } : { calls: [['final_answer', { city: 'Paris', population: 2102650 }]] };
    case 'tool':
    case 'choice':
      return turn === 0 ? { calls: [['lookup', { key: 'a' }]] } : { text: `Found ${toolTexts.at(-1)}.` };
    case 'parallel':
      return turn === 0
        ? { text: 'Working on it.', calls: [['lookup', { key: 'a' }], ['ask_user', { question: 'Which colour?' }], ['lookup', { key: 'c' }]] }
        : { text: `Results: ${toolTexts.join(' | ')}` };
    case 'badargs':
      if (turn === 0) return { calls: [['lookup', '{"key": "a",']] };
      if (turn === 1) return { calls: [['lookup', { key: 'a' }]] };
      return { text: `Recovered after: ${toolTexts[0]}` };
    default: return { text: `unknown scenario ${scenario}` };
  }
}

/**
 * The answers a normal script never gives: cut at max_tokens (the first time only), a refusal, a content
 * filter, empty answers, and Anthropic thinking blocks that must come back unchanged before the tool_use.
 */
function stopScenario(provider, scenario, n, turn, body, errors) {
  if (provider === 'openai-responses') return responsesStop(scenario, n, turn, body);
  if (provider === 'gemini') return geminiStop(scenario, n, turn);
  const a = provider === 'anthropic';
  const text = (t, stop) => (a ? anthropicMessage([{ type: 'text', text: t }], turn, stop) : openAiCompletion({ content: t }, turn, stop));
  switch (scenario) {
    case 'cut':
    case 'alwaysmax':
      if (n > 1 && scenario === 'cut') return text('Complete answer.', a ? 'end_turn' : 'stop');
      return a
        ? anthropicMessage([{ type: 'text', text: 'Let me look' }, { type: 'tool_use', id: 'toolu_cut', name: 'lookup', input: {} }], turn, 'max_tokens')
        : openAiCompletion({ content: 'Let me look', tool_calls: [{ id: 'call_cut', type: 'function', function: { name: 'lookup', arguments: '{"key": "' } }] }, turn, 'length');
    case 'refusal':
      return a
        ? anthropicMessage([{ type: 'text', text: 'I cannot help with that.' }], turn, 'refusal')
        : openAiCompletion({ content: null, refusal: 'I cannot help with that.' }, turn, 'stop');
    case 'filter':
      return a ? anthropicMessage([], turn, 'refusal') : openAiCompletion({ content: null }, turn, 'content_filter');
    case 'empty':
    case 'emptytext':
      if (n > 1) return text('After an empty answer.', a ? 'end_turn' : 'stop');
      if (scenario === 'empty') return a ? anthropicMessage([], turn, 'end_turn') : openAiCompletion({ content: null }, turn, 'stop');
      return text('', a ? 'end_turn' : 'stop');
    case 'thinking': {
      if (!a) return null;
      if (!body.thinking) errors.push('anthropic: the thinking scenario expects extended thinking enabled');
      const thought = [{ type: 'thinking', thinking: 'I should look a up.', signature: 'EqQBCgIYAhIM1gbcDa9GJwZA' }, { type: 'redacted_thinking', data: 'EmwKAhgBEgy3va3pzix' }];
      if (turn === 0) return anthropicMessage([...thought, { type: 'tool_use', id: 'toolu_think', name: 'lookup', input: { key: 'a' } }], turn, 'tool_use');
      const sent = body.messages[1].content;
      if (isDeepStrictEqual(sent.slice(0, 2), thought)) return text('Thought it through.', 'end_turn');
      errors.push(`anthropic: thinking blocks not sent back as they were: ${JSON.stringify(sent)}`);
      return text('The thinking blocks were lost.', 'end_turn');
    }
    default: return null;
  }
}

/** stopScenario for the Responses API: `status: 'incomplete'` with its reason, refusal parts, empty output. */
function responsesStop(scenario, n, turn, body) {
  const thought = body.store === false ? [reasoningItem(turn)] : [];
  switch (scenario) {
    case 'cut':
    case 'alwaysmax':
      if (n > 1 && scenario === 'cut') return responsesBody([...thought, textItem('Complete answer.', turn)], turn);
      return responsesBody([...thought, textItem('Let me look', turn), callItem(turn, 0, 'lookup', '{"key": "')], turn, 'incomplete', 'max_output_tokens');
    case 'refusal':
      return responsesBody([messageItem(turn, { type: 'refusal', refusal: 'I cannot help with that.' })], turn);
    case 'filter':
      return responsesBody([], turn, 'incomplete', 'content_filter');
    case 'empty':
    case 'emptytext':
      if (n > 1) return responsesBody([textItem('After an empty answer.', turn)], turn);
      return responsesBody(scenario === 'empty' ? [...thought] : [...thought, textItem('', turn)], turn);
    default: return null;
  }
}

// ---- streaming: the same answers as server-sent events, in each vendor's documented format ------------

/** Splits `text` into about three pieces (so a delta never carries a whole answer). */
function pieces(text) {
  if (text.length < 3) return text ? [text] : [];
  const a = Math.ceil(text.length / 3);
  return [text.slice(0, a), text.slice(a, 2 * a), text.slice(2 * a)];
}

/** An Anthropic Messages body as its stream: [eventName, data, tag] frames. */
function anthropicFrames(message) {
  const frames = [['message_start', { type: 'message_start', message: { ...message, content: [], stop_reason: null, usage: { ...message.usage, output_tokens: 1 } } }]];
  frames.push(['ping', { type: 'ping' }]);
  message.content.forEach((block, index) => {
    const start = block.type === 'text' ? { type: 'text', text: '' }
      : block.type === 'tool_use' ? { ...block, input: {} }
        : block.type === 'thinking' ? { type: 'thinking', thinking: '', signature: '' }
          : block;
    frames.push(['content_block_start', { type: 'content_block_start', index, content_block: start }]);
    if (block.type === 'text') {
      for (const t of pieces(block.text)) frames.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text: t } }, 'text']);
    } else if (block.type === 'tool_use') {
      for (const j of pieces(JSON.stringify(block.input))) frames.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: j } }, 'args']);
    } else if (block.type === 'thinking') {
      for (const t of pieces(block.thinking)) frames.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'thinking_delta', thinking: t } }]);
      frames.push(['content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: block.signature } }]);
    }
    frames.push(['content_block_stop', { type: 'content_block_stop', index }]);
  });
  // The vendor's schema lets message_delta's input counts be null ("not given"): the message_start count stands.
  frames.push(['message_delta', { type: 'message_delta', delta: { stop_reason: message.stop_reason, stop_sequence: null }, usage: { input_tokens: null, cache_creation_input_tokens: null, cache_read_input_tokens: null, output_tokens: message.usage.output_tokens } }]);
  frames.push(['message_stop', { type: 'message_stop' }]);
  return frames;
}

/** A Chat Completions body as its stream of chunks, with include_usage, then [DONE]. */
function openAiFrames(completion) {
  const { message, finish_reason: finish } = completion.choices[0];
  const chunk = (delta, finishReason = null) => ({ id: completion.id, object: 'chat.completion.chunk', created: completion.created, model: completion.model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }] });
  const frames = [[null, chunk({ role: 'assistant', content: '' })]];
  for (const t of pieces(message.content ?? '')) frames.push([null, chunk({ content: t }), 'text']);
  if (message.refusal) frames.push([null, chunk({ refusal: message.refusal })]);
  (message.tool_calls ?? []).forEach((c, index) => {
    frames.push([null, chunk({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.function.name, arguments: '' } }] })]);
    for (const a of pieces(c.function.arguments)) frames.push([null, chunk({ tool_calls: [{ index, function: { arguments: a } }] }), 'args']);
  });
  frames.push([null, chunk({}, finish)]);
  frames.push([null, { id: completion.id, object: 'chat.completion.chunk', created: completion.created, model: completion.model, choices: [], usage: completion.usage }]);
  frames.push([null, '[DONE]']);
  return frames;
}

/**
 * A Responses body as its stream. Every second stream's `response.completed` leaves its `output` out (the items
 * streamed before it stand), so both ways of reading the end are exercised. A reasoning item's `.added` form
 * carries a placeholder encrypted reasoning: only `.done`'s may be kept.
 */
function responsesFrames(resp, n) {
  let seq = 0;
  const frame = (type, data, tag) => [type, { type, sequence_number: seq++, ...data }, tag];
  const frames = [frame('response.created', { response: { ...resp, status: 'in_progress', output: [], usage: null, incomplete_details: null } })];
  frames.push(frame('response.in_progress', { response: { ...resp, status: 'in_progress', output: [], usage: null, incomplete_details: null } }));
  resp.output.forEach((item, output_index) => {
    if (item.type === 'reasoning') {
      frames.push(frame('response.output_item.added', { output_index, item: { ...item, summary: [], encrypted_content: 'gAAAAB-partial' } }));
      item.summary.forEach((s, summary_index) => frames.push(frame('response.reasoning_summary_text.delta', { item_id: item.id, output_index, summary_index, delta: s.text })));
    } else if (item.type === 'message') {
      frames.push(frame('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } }));
      item.content.forEach((part, content_index) => {
        const refusal = part.type === 'refusal';
        frames.push(frame('response.content_part.added', { item_id: item.id, output_index, content_index, part: refusal ? { type: 'refusal', refusal: '' } : { type: 'output_text', text: '', annotations: [] } }));
        for (const d of pieces(refusal ? part.refusal : part.text)) {
          frames.push(frame(refusal ? 'response.refusal.delta' : 'response.output_text.delta', { item_id: item.id, output_index, content_index, delta: d }, 'text'));
        }
        frames.push(frame('response.content_part.done', { item_id: item.id, output_index, content_index, part }));
      });
    } else if (item.type === 'function_call') {
      frames.push(frame('response.output_item.added', { output_index, item: { ...item, arguments: '', status: 'in_progress' } }));
      for (const d of pieces(item.arguments)) frames.push(frame('response.function_call_arguments.delta', { item_id: item.id, output_index, delta: d }, 'args'));
      frames.push(frame('response.function_call_arguments.done', { item_id: item.id, output_index, arguments: item.arguments }));
    }
    frames.push(frame('response.output_item.done', { output_index, item }));
  });
  const end = resp.status === 'incomplete' ? 'response.incomplete' : 'response.completed';
  frames.push(frame(end, { response: n % 2 ? resp : { ...resp, output: [] } }));
  return frames;
}

/**
 * Answers `payload` (a non-streamed body) as server-sent events. `cutAt` ('text' or 'args') closes the
 * connection right after the first frame with that tag: a stream broken mid-answer.
 */
async function sendStream(res, provider, payload, cutAt, n) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const write = (text) => new Promise((resolve) => res.write(text, resolve));
  const frames = { anthropic: () => anthropicFrames(payload), openai: () => openAiFrames(payload), gemini: () => geminiFrames(payload) }[provider]?.() ?? responsesFrames(payload, n);
  for (const [name, data, tag] of frames) {
    const text = `${name ? `event: ${name}\n` : ''}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
    // Each frame in two writes: a reader must join lines split anywhere.
    const half = Math.floor(text.length / 2);
    await write(text.slice(0, half));
    await write(text.slice(half));
    if (cutAt && tag === cutAt) {
      // Flushed, and given time to arrive, before the connection breaks.
      await new Promise((resolve) => setTimeout(resolve, 30));
      res.socket.destroy();
      return;
    }
  }
  res.end();
}


export function startServer() {
  const state = { errors: [], requests: [], counts: new Map() };
  const server = createServer(async (req, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    // Pages call it too (the Chromium tests): any origin, as the vendors' APIs allow.
    res.setHeader('access-control-allow-origin', '*');
    if (req.method === 'OPTIONS') {
      res.writeHead(204, { 'access-control-allow-methods': 'POST', 'access-control-allow-headers': 'authorization, content-type, x-api-key, anthropic-version, x-goog-api-key', 'access-control-max-age': '600' });
      return res.end();
    }
    const send = (status, payload, headers = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(payload));
    };
    const gemini = /^\/gemini\/models\/gemini-test:(generateContent|streamGenerateContent\?alt=sse)$/.exec(req.url);
    const provider = { '/anthropic/v1/messages': 'anthropic', '/openai/chat/completions': 'openai', '/openai-responses/responses': 'openai-responses' }[req.url] ?? (gemini ? 'gemini' : null);
    if (req.method !== 'POST' || !provider) return send(404, { error: { message: `no route ${req.method} ${req.url}` } });
    let body;
    try {
      body = JSON.parse(raw);
      ({ anthropic: checkAnthropic, openai: checkOpenAi, 'openai-responses': checkResponses, gemini: checkGemini })[provider](req, body, state.errors);
      // Gemini says "stream" in its URL; the tests read it from the body like the others'.
      if (gemini && gemini[1] !== 'generateContent') Object.defineProperty(body, 'stream', { value: true, enumerable: false });
    } catch (e) {
      return send(400, provider === 'anthropic'
        ? { type: 'error', error: { type: 'invalid_request_error', message: e.message } }
        : { error: { message: e.message, type: 'invalid_request_error', param: null, code: null } });
    }
    state.requests.push({ provider, at: Date.now(), body });
    const responses = provider === 'openai-responses';
    const firstUser = (body.messages ?? body.input ?? body.contents).find((m) => m.role === 'user');
    const said = firstUser.parts ?? firstUser.content;
    const scenario = (typeof said === 'string' ? said : said.map((p) => p.text ?? '').join(' ')).match(/scenario:(\w+)/)?.[1] ?? 'text';
    const n = (state.counts.get(`${provider}/${scenario}`) ?? 0) + 1;
    state.counts.set(`${provider}/${scenario}`, n);
    const turn = responses ? responsesTurns(body.input).filter((t) => t.side === 'assistant').length
      : gemini ? body.contents.filter((c) => c.role === 'model').length : body.messages.filter((m) => m.role === 'assistant').length;
    if (responses) checkReasoningBack(body, state.errors);
    if (gemini) checkSignaturesBack(body, state.errors);
    if (scenario === 'retry429' && n === 1) {
      return send(429, provider === 'anthropic'
        ? { type: 'error', error: { type: 'rate_limit_error', message: 'Number of requests has exceeded your rate limit' } }
        : gemini ? { error: { code: 429, message: 'Resource has been exhausted (e.g. check quota).', status: 'RESOURCE_EXHAUSTED' } }
        : { error: { message: 'Rate limit reached for requests', type: 'requests', code: 'rate_limit_exceeded' } }, { 'retry-after': '1' });
    }
    if (scenario === 'error500') {
      return send(500, provider === 'anthropic'
        ? { type: 'error', error: { type: 'api_error', message: `Internal server error (key ${API_KEY})` } }
        : gemini ? { error: { code: 500, message: `An internal error has occurred (key ${API_KEY})`, status: 'INTERNAL' } }
        : { error: { message: `The server had an error (key ${API_KEY})`, type: 'server_error', code: null } });
    }
    // A streamed request gets the same answer as events; the cut scenarios break the first stream.
    const answer = (payload) => {
      if (!body.stream) return send(200, payload);
      if (provider === 'openai' && body.stream_options?.include_usage !== true) state.errors.push('openai: stream without stream_options.include_usage');
      const cutAt = (scenario === 'cutstream' && n === 1) || scenario === 'alwayscut' ? 'text' : scenario === 'cutargs' && n === 1 ? 'args' : null;
      return sendStream(res, provider, payload, cutAt, n);
    };
    const stopped = stopScenario(provider, scenario, n, turn, body, state.errors);
    if (stopped) return answer(stopped);
    const toolTexts = gemini ? body.contents.flatMap((c) => c.parts).filter((p) => p.functionResponse).map((p) => p.functionResponse.response.output ?? `error: ${p.functionResponse.response.error}`)
      : responses ? body.input.filter((x) => x.type === 'function_call_output').map((x) => x.output) : provider === 'anthropic'
      ? body.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((b) => b.type === 'tool_result').map((b) => (b.is_error ? `error: ${b.content}` : b.content))
      : body.messages.filter((m) => m.role === 'tool').map((m) => m.content);
    const step = script(scenario === 'retry429' ? 'text' : scenario, turn, toolTexts);
    const calls = step.calls ?? [];
    if (provider === 'anthropic') {
      const content = [];
      if (step.text) content.push({ type: 'text', text: step.text });
      calls.forEach(([name, input], k) => content.push({ type: 'tool_use', id: `toolu_0${turn}${k}XYZ`, name, input: typeof input === 'string' ? {} : input }));
      return answer(anthropicMessage(content, turn, calls.length ? 'tool_use' : 'end_turn'));
    }
    if (gemini) return answer(geminiBody(geminiParts(step, turn), turn));
    if (responses) {
      const output = body.store === false ? [reasoningItem(turn)] : [];
      if (step.text) output.push(textItem(step.text, turn));
      calls.forEach(([name, input], k) => output.push(callItem(turn, k, name, typeof input === 'string' ? input : JSON.stringify(input))));
      return answer(responsesBody(output, turn));
    }
    const message = { content: step.text ?? null };
    if (calls.length) {
      message.tool_calls = calls.map(([name, input], k) => ({
        id: `call_${turn}${k}abc`, type: 'function', function: { name, arguments: typeof input === 'string' ? input : JSON.stringify(input) },
      }));
    }
    return answer(openAiCompletion(message, turn, calls.length ? 'tool_calls' : 'stop'));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, state, port: server.address().port })));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { port, state } = await startServer();
  console.log(JSON.stringify({ port }));
  // A line on stdin asks for the recorded violations (used by the Rust tests).
  process.stdin.on('data', () => console.log(JSON.stringify({ errors: state.errors, requests: state.requests.length })));
}
