// LangGraph (JS): the idiomatic human-in-the-loop pattern. A StateGraph over MessagesAnnotation with an
// `agent` node (a chat model with tools bound) and a prebuilt ToolNode; `ask_user` calls `interrupt()`; the
// graph runs with a MemorySaver checkpointer; the run is resumed with `new Command({ resume: answer })`.
//
// Crossing the process boundary: a MemorySaver lives in memory, so the pause is made portable the way a
// persistent checkpointer (SQLite/Postgres) would store it: the thread's latest checkpoint tuple (checkpoint,
// metadata, pending writes — the interrupt is recorded as a pending write) is read with the saver's public
// `getTuple`, and serialized with the saver's own serializer (LangChain's JsonPlusSerializer, which
// revives message classes). The fresh side builds a new MemorySaver and a new compiled graph, stores the tuple
// with the public `put` / `putWrites`, and invokes `Command({ resume })` on the same thread id.
import { StateGraph, MessagesAnnotation, MemorySaver, Command, interrupt, START, END } from '@langchain/langgraph';
import { ToolNode, toolsCondition } from '@langchain/langgraph/prebuilt';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, SystemMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { INSTRUCTIONS, PROMPT, ANSWER, decide, lookupResult, checkHistory, runResult } from '../lib/workload.mjs';

export const label = 'LangGraph';

const THREAD = 'bench-thread';
const decoder = new TextDecoder();

/** A chat model that answers instantly from the shared script (LangChain's BaseChatModel contract). */
class FakeChatModel extends BaseChatModel {
  constructor(n, probe) {
    super({});
    this.n = n;
    this.probe = probe;
  }
  _llmType() {
    return 'fake-bench';
  }
  bindTools() {
    return this;
  }
  // The model sees LangChain messages: [System, Human, (AI with tool_calls, Tool) x k], so k = (len - 2) / 2
  // and the final call (k = n) must see 2n + 2 messages.
  async _generate(messages) {
    const k = (messages.length - 2) / 2;
    const d = decide(this.n, k, this.probe.answer);
    let message;
    if (d.kind === 'lookup') message = new AIMessage({ content: '', tool_calls: [{ id: d.id, name: 'lookup', args: { key: d.key }, type: 'tool_call' }] });
    else if (d.kind === 'ask') message = new AIMessage({ content: '', tool_calls: [{ id: d.id, name: 'ask_user', args: { question: d.question }, type: 'tool_call' }] });
    else {
      this.probe.finalCallAt ??= performance.now();
      this.probe.lastRequestMessageCount = messages.length;
      if (messages[0].content !== INSTRUCTIONS) throw new Error('final call lost the instructions');
      const results = [];
      for (let i = 3; i < messages.length; i += 2) results.push(messages[i].content);
      checkHistory(this.n, results, this.probe.answer);
      message = new AIMessage({ content: d.text, usage_metadata: { input_tokens: 0, output_tokens: 0, total_tokens: 0 } });
    }
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] };
  }
}

// Everything is built anew for the resume, as a new process would: tools, model, graph, checkpointer.
function build(n, probe, checkpointer) {
  const lookup = tool(async ({ key }) => lookupResult(key), {
    name: 'lookup',
    description: 'Looks up a catalogue item by key.',
    schema: z.object({ key: z.string() }),
  });
  const askUser = tool(async ({ question }) => interrupt(question), {
    name: 'ask_user',
    description: 'Asks the human a question and waits for the answer.',
    schema: z.object({ question: z.string() }),
  });
  const tools = [lookup, askUser];
  const model = new FakeChatModel(n, probe).bindTools(tools);
  const callModel = async (state) => ({ messages: [await model.invoke([new SystemMessage(INSTRUCTIONS), ...state.messages])] });
  return new StateGraph(MessagesAnnotation)
    .addNode('agent', callModel)
    .addNode('tools', new ToolNode(tools))
    .addEdge(START, 'agent')
    .addConditionalEdges('agent', toolsCondition, ['tools', END])
    .addEdge('tools', 'agent')
    .compile({ checkpointer });
}

// W(200) takes about 400 supersteps; the default recursionLimit is 25.
const runConfig = () => ({ configurable: { thread_id: THREAD }, recursionLimit: 10_000 });

export async function pauseW(n, answer = ANSWER) {
  const probe = { answer };
  const checkpointer = new MemorySaver();
  const graph = build(n, probe, checkpointer);
  const out = await graph.invoke({ messages: [{ role: 'user', content: PROMPT }] }, runConfig());
  if (!out.__interrupt__?.length) throw new Error('expected an interrupt');
  const t0 = performance.now();
  const tuple = await checkpointer.getTuple({ configurable: { thread_id: THREAD } });
  const [, bytes] = await checkpointer.serde.dumpsTyped({
    checkpoint: tuple.checkpoint,
    metadata: tuple.metadata,
    pendingWrites: tuple.pendingWrites,
  });
  const checkpointString = decoder.decode(bytes);
  const t1 = performance.now();
  return { checkpointString, pauseMs: t1 - t0, held: { out, checkpointer, graph } };
}

export async function runW(n, answer = ANSWER) {
  const start = performance.now();
  const { checkpointString, pauseMs } = await pauseW(n, answer);
  // ---- "new process": nothing but the string crosses this line ----
  const probe = { answer };
  const t1 = performance.now();
  const checkpointer = new MemorySaver();
  const { checkpoint, metadata, pendingWrites } = await checkpointer.serde.loadsTyped('json', checkpointString);
  const saved = await checkpointer.put({ configurable: { thread_id: THREAD, checkpoint_ns: '' } }, checkpoint, metadata, {});
  const byTask = new Map();
  for (const [taskId, channel, value] of pendingWrites) {
    if (!byTask.has(taskId)) byTask.set(taskId, []);
    byTask.get(taskId).push([channel, value]);
  }
  for (const [taskId, writes] of byTask) await checkpointer.putWrites(saved, writes, taskId);
  const graph = build(n, probe, checkpointer);
  const out = await graph.invoke(new Command({ resume: answer }), runConfig());
  const end = performance.now();
  if (out.__interrupt__?.length) throw new Error('expected a final answer');
  const last = out.messages.at(-1);
  return runResult({ text: last.content, probe, expectedLastRequestMessageCount: 2 * n + 2, pauseMs, t1, checkpointString, start, end });
}
