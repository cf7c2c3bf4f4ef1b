// An in-browser agent whose paused runs live in IndexedDB (one session per conversation).
import {
  agent, defineTool, InterruptError, isInterrupted, scriptedModel, indexedDbSaver, listSessions, SaverError,
} from 'resumable-agent';

const saver = indexedDbSaver({ dbName: 'planner', storeName: 'sessions' });
// Other tabs of this origin hear about every save and delete, and refresh their list.
const channel = new BroadcastChannel('planner-sessions');

const askUser = defineTool({
  name: 'ask_user',
  description: 'Ask the human a clarifying question before continuing.',
  schema: (s) => ({ question: s.string().required() }),
  handle: ({ question }) => { throw new InterruptError(question); },
});

const firstUserText = (req) => req.messages.find((m) => m.role === 'user' && typeof m.content === 'string').content;
const resultOf = (req, id) => req.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
  .find((b) => b.type === 'tool_result' && b.toolUseId === id)?.content;

// A scripted stand-in for a real model: it picks its turn from the conversation, so it continues a run
// restored after a reload exactly as if the tab had never closed.
const config = {
  instructions: 'You plan projects. Ask the user for anything you need.',
  tools: [askUser],
  model: scriptedModel([
    { content: [{ type: 'text', text: 'Happy to plan that.' },
      { type: 'tool_use', id: 'ask_deadline', name: 'ask_user', input: { question: 'What is your deadline?' } }] },
    (req) => `Here is the plan for "${firstUserText(req)}": design, build and test, done by ${resultOf(req, 'ask_deadline')}.`,
    (req) => `Noted: ${req.messages.at(-1).content}`,
  ]),
};

const $ = (id) => document.getElementById(id);
let current = location.hash.slice(1) || null;

function bubble(kind, text) {
  const li = document.createElement('li');
  li.className = kind;
  li.textContent = text;
  $('chat').append(li);
}

function render(checkpoint) {
  $('chat').replaceChildren();
  for (const m of checkpoint?.messages ?? []) {
    if (typeof m.content === 'string') { bubble(m.role, m.content); continue; }
    for (const b of m.content) {
      if (b.type === 'text') bubble(m.role, b.text);
      else if (b.type === 'tool_use' && b.name === 'ask_user') bubble('assistant question', b.input.question);
      else if (b.type === 'tool_result') bubble('user', b.content);
    }
  }
  const waiting = checkpoint?.pendingToolUseId !== undefined;
  $('status').textContent = waiting ? `Waiting for your answer: ${checkpoint.question}` : checkpoint ? 'Done — send another message to continue.' : '';
  $('input').placeholder = waiting ? 'Your answer' : checkpoint ? 'Continue the conversation' : 'What should we plan?';
  document.body.dataset.state = waiting ? 'paused' : checkpoint ? 'complete' : 'empty';
}

async function renderSessions() {
  const sessions = (await listSessions(saver)).sort((a, b) => (b.updatedAt ?? 0) - (a.updatedAt ?? 0));
  $('sessions').replaceChildren(...sessions.map((s) => {
    const li = document.createElement('li');
    li.dataset.session = s.key;
    if (s.key === current) li.classList.add('current');
    const open = document.createElement('button');
    open.className = 'open';
    open.type = 'button';
    open.textContent = s.key;
    const small = document.createElement('small');
    small.textContent = s.interrupted ? `Waiting: ${s.question}` : `Done (${s.messageCount} messages)`;
    open.append(small);
    open.onclick = () => select(s.key);
    const del = document.createElement('button');
    del.className = 'delete';
    del.type = 'button';
    del.textContent = 'Delete';
    del.setAttribute('aria-label', `delete ${s.key}`);
    del.onclick = async () => {
      await saver.delete(s.key);
      channel.postMessage('changed');
      if (s.key === current) select(null);
      await renderSessions();
    };
    li.append(open, del);
    return li;
  }));
}

async function select(id) {
  current = id;
  history.replaceState(null, '', id ? `#${id}` : location.pathname);
  render(id ? await saver.get(id) : null);
  await renderSessions();
  $('input').focus();
}

async function send(text) {
  const id = current ?? `plan-${new Date().toISOString().slice(11, 19).replaceAll(':', '')}-${Math.random().toString(36).slice(2, 6)}`;
  const existing = current ? await saver.get(current) : null;
  const session = agent(config).session(saver, id, { keepCompleted: true });
  $('status').textContent = 'Thinking…';
  try {
    const result = existing?.pendingToolUseId ? await session.reply(text) : await session.prompt(text);
    current = id;
    history.replaceState(null, '', `#${id}`);
    render(result.checkpoint);
    if (!isInterrupted(result)) $('status').textContent = `Done: ${result.text.length} characters, ${result.iterations} model calls.`;
  } catch (e) {
    $('status').textContent = e instanceof SaverError && e.code === 'QUOTA_EXCEEDED'
      ? 'This browser is out of storage for this site; the run was not saved. Free some space and retry.'
      : `Error: ${e.message}`;
  }
  channel.postMessage('changed');
  await renderSessions();
}

$('composer').addEventListener('submit', (e) => {
  e.preventDefault();
  const text = $('input').value.trim();
  if (!text) return;
  $('input').value = '';
  send(text);
});
$('new').onclick = () => select(null);
channel.onmessage = () => renderSessions();

// After a reload: reopen the session in the address, else the latest one still waiting for an answer.
if (!current) current = (await listSessions(saver)).filter((s) => s.interrupted).sort((a, b) => (b.updatedAt ?? 0) - (a.updatedAt ?? 0))[0]?.key ?? null;
await select(current);
document.body.dataset.ready = 'true';
