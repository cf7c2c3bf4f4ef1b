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
// `?worker=http://127.0.0.1:8787`: the agent runs in that Worker (examples/worker-js, POST /stream) and this
// page shows its events as they arrive; without it, the agent runs in this tab.
const worker = new URLSearchParams(location.search).get('worker');
window.__deltas = []; // every text-delta shown, for the page test

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
      await agent(config).session(saver, s.key).delete();
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
  render(id ? await agent(config).session(saver, id).checkpoint() : null);
  await renderSessions();
  $('input').focus();
}

/**
 * Shows a run's events as they arrive: text as the model writes it, the question the moment the run
 * pauses. Returns the last event (`done` or `error`).
 */
async function show(events) {
  let live = null;
  let last = null;
  for await (const e of events) {
    last = e;
    if (e.type === 'step-start') live = null;
    else if (e.type === 'text-delta') {
      if (!live) {
        live = document.createElement('li');
        live.className = 'assistant live';
        $('chat').append(live);
      }
      live.textContent += e.text;
      window.__deltas.push(e.text);
      document.body.dataset.state = 'streaming';
    } else if (e.type === 'step-restart' && live) live.textContent = '';
    else if (e.type === 'step-finish' && !live) {
      // A step whose text was not streamed to this page (a replay after a reload): shown whole.
      const text = (e.content ?? []).filter((b) => b.type === 'text').map((b) => b.text).join('');
      if (text) bubble('assistant', text);
    }
    else if (e.type === 'interrupt') {
      bubble('assistant question', e.question);
      $('status').textContent = `Waiting for your answer: ${e.question}`;
      document.body.dataset.state = 'paused';
    }
  }
  return last;
}

// The Worker knows this browser by a token it made (kept here), and numbers its events: the page remembers the
// last one it showed, so after a reload mid-run it reconnects with Last-Event-ID and misses nothing.
const TOKEN = 'ra-worker-token';
const STREAMING = 'ra-worker-streaming';
const auth = () => (localStorage.getItem(TOKEN) ? { authorization: `Bearer ${localStorage.getItem(TOKEN)}` } : {});

/** POST /stream to the Worker; its server-sent events as objects like the package's own events. */
async function* workerEvents(body, lastEventId) {
  const headers = { 'content-type': 'application/json', ...auth(), ...(lastEventId === undefined ? {} : { 'last-event-id': String(lastEventId) }) };
  const res = await fetch(`${worker}/stream`, { method: 'POST', headers, body: JSON.stringify(body) });
  if (!res.ok) {
    yield { type: 'error', error: { message: (await res.json()).error } };
    return;
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    buffer += value;
    for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const type = /^event: (.*)$/m.exec(frame)?.[1];
      const id = /^id: (.*)$/m.exec(frame)?.[1];
      const data = JSON.parse(/^data: (.*)$/m.exec(frame)?.[1] ?? 'null');
      if (type === 'session') {
        if (data.token) localStorage.setItem(TOKEN, data.token);
        current = data.sessionId;
        history.replaceState(null, '', `${location.search}#${current}`);
        continue;
      }
      if (id !== undefined) sessionStorage.setItem(STREAMING, JSON.stringify({ sessionId: current, lastEventId: Number(id) }));
      yield type === 'error' ? { type, error: { message: data.error } } : { type, ...data };
    }
  }
}

/** Shows a Worker's stream to its end and what it ended with. */
async function showWorker(events) {
  const last = await show(events);
  sessionStorage.removeItem(STREAMING);
  if (last?.type === 'done' && last.answer !== undefined) {
    $('status').textContent = 'Done — send another message to continue.';
    document.body.dataset.state = 'complete';
  } else if (last?.type === 'error') {
    $('status').textContent = `Error: ${last.error.message}`;
    document.body.dataset.state = 'error';
  }
}

async function sendToWorker(text) {
  const waiting = document.body.dataset.state === 'paused';
  bubble('user', text);
  $('status').textContent = 'Thinking…';
  sessionStorage.setItem(STREAMING, JSON.stringify({ sessionId: current, lastEventId: null }));
  // Paused: the answer; finished: the same conversation goes on; nothing yet: a new one.
  const body = waiting && current ? { sessionId: current, answer: text } : current ? { sessionId: current, message: text } : { message: text };
  await showWorker(workerEvents(body));
}

async function send(text) {
  if (worker) return sendToWorker(text);
  const id = current ?? `plan-${new Date().toISOString().slice(11, 19).replaceAll(':', '')}-${Math.random().toString(36).slice(2, 6)}`;
  const existing = current ? await agent(config).session(saver, current).checkpoint() : null;
  const session = agent(config).session(saver, id, { keepCompleted: true });
  $('status').textContent = 'Thinking…';
  bubble('user', text);
  const stream = session.stream(existing?.pendingToolUseId ? { answer: text } : { prompt: text });
  await show(stream);
  try {
    const result = await stream.result;
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

if (worker) {
  // The Worker keeps the sessions; this page shows the one it is talking to.
  document.querySelector('aside').hidden = true;
  $('status').textContent = `Talking to the agent in ${worker}`;
  document.body.dataset.state = 'empty';
  // Reloaded mid-run: the run went on in the Worker; show what it wrote since the last event shown.
  const streaming = JSON.parse(sessionStorage.getItem(STREAMING) ?? 'null');
  if (streaming?.sessionId && Number.isInteger(streaming.lastEventId)) {
    current = streaming.sessionId;
    $('status').textContent = 'Reconnecting…';
    document.body.dataset.reconnected = 'true';
    showWorker(workerEvents({ sessionId: streaming.sessionId }, streaming.lastEventId));
  }
} else {
  // After a reload: reopen the session in the address, else the latest one still waiting for an answer.
  if (!current) current = (await listSessions(saver)).filter((s) => s.interrupted).sort((a, b) => (b.updatedAt ?? 0) - (a.updatedAt ?? 0))[0]?.key ?? null;
  await select(current);
}
document.body.dataset.ready = 'true';
