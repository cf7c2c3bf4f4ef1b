// A terminal agent whose sessions live in files (fileSaver): quit at any time, come back with the same
// --session and it carries on where it stopped — a pending question included.
//
//   node examples/cli --session trip [--dir .sessions]
//
// Commands: /sessions, /history, /label NAME, /restore ID|NAME, /quit. Anything else is your message (or your
// answer, when the agent asked something). MODEL_PROVIDER=anthropic|openai (with ANTHROPIC_API_KEY /
// OPENAI_API_KEY, MODEL, OPENAI_BASE_URL) uses a real model; unset, a scripted trip planner stands in.
import { createInterface } from 'node:readline';
import {
  agent, defineTool, InterruptError, isInterrupted, scriptedModel, fileSaver, listSessions, anthropic, openai,
  AgentError,
} from 'resumable-agent';

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

/** Stops with a one-line message (no stack trace) and exit code 2. */
function fail(message) {
  process.stderr.write(`${safe(message)}\n`);
  process.exit(2);
}

// Text from the model, a tool or a session file is shown, never obeyed: terminal control characters (ESC
// sequences such as an OSC 52 clipboard write, C1 controls) and bidi overrides become visible escapes.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
function safe(text) {
  return String(text).replace(CONTROL, (c) => `\\u{${c.codePointAt(0).toString(16)}}`);
}

const sessionId = arg('session', 'default');
let saver;
try {
  // Files are the user's alone: mode 0600 in a 0700 directory.
  saver = fileSaver({ dir: arg('dir', '.sessions') });
} catch (e) {
  fail(`--dir: ${e.message}`);
}

const askUser = defineTool({
  name: 'ask_user',
  description: 'Ask the human a question before going on.',
  schema: (s) => ({ question: s.string().required() }),
  handle: ({ question }) => { throw new InterruptError(question); },
});

const answerTo = (req, n) => req.messages.filter((m) => Array.isArray(m.content)).flatMap((m) => m.content)
  .filter((b) => b.type === 'tool_result').map((b) => b.content)[n];
const ask = (id, question) => ({ content: [{ type: 'tool_use', id, name: 'ask_user', input: { question } }] });

function model() {
  switch (process.env.MODEL_PROVIDER) {
    case 'anthropic': return anthropic({ apiKey: process.env.ANTHROPIC_API_KEY, model: process.env.MODEL ?? 'claude-sonnet-4-5' });
    case 'openai': return openai({ apiKey: process.env.OPENAI_API_KEY, model: process.env.MODEL ?? 'gpt-4.1-mini', baseURL: process.env.OPENAI_BASE_URL });
    default: return scriptedModel([
      ask('q_city', 'Which city are you visiting?'),
      ask('q_days', 'How many days?'),
      (req) => `Plan: ${answerTo(req, 1)} days in ${answerTo(req, 0)}.`,
      ...Array.from({ length: 50 }, () => (req) => `Noted: ${req.messages.at(-1).content}.`),
    ]);
  }
}

const trip = agent({ instructions: 'Plan trips. Ask for what you miss.', tools: [askUser], model: model() });
let session;
try {
  session = trip.session(saver, sessionId, { keepCompleted: true });
} catch (e) {
  fail(`--session ${JSON.stringify(sessionId)}: ${e.message}`);
}

const out = (line) => process.stdout.write(`${safe(line)}\n`);
const when = (ms) => new Date(ms).toISOString().replace('T', ' ').slice(0, 16);

const messages = (n) => `${n} message${n === 1 ? '' : 's'}`;

function describeCheckpoint(cp) {
  return `${messages(cp.messages.length)}${cp.question ? `, paused on "${cp.question}"` : ''}`;
}

async function show(result) {
  out(isInterrupted(result) ? `agent asks: ${result.question}` : `agent: ${result.text}`);
}

async function command(line) {
  const [name, ...rest] = line.trim().split(/\s+/);
  const value = rest.join(' ');
  switch (name) {
    case '/sessions':
      for (const s of await listSessions(saver)) {
        out(`  ${s.key}${s.key === sessionId ? ' (this one)' : ''}: ${messages(s.messageCount)}, updated ${when(s.updatedAt)}${s.interrupted ? `, paused on "${s.question}"` : ''}`);
      }
      return true;
    case '/history':
      for (const h of await session.history({ limit: 20 })) {
        out(`  #${h.step}${h.label ? ` [${h.label}]` : ''}: ${messages(h.messageCount)}${h.interrupted ? `, paused on "${h.question}"` : ''}${h.parentStep && h.parentStep !== h.step - 1 ? ` (branch from #${h.parentStep})` : ''}`);
      }
      return true;
    case '/label': {
      const head = await session.checkpoint();
      if (!head || !value) { out('usage: /label NAME (names the latest step)'); return true; }
      await session.label(head.thread.step, value);
      out(`labelled #${head.thread.step} "${value}"`);
      return true;
    }
    case '/restore': {
      if (!value) { out('usage: /restore ID|NAME'); return true; }
      const cp = await session.restore(value);
      out(`restored #${cp.thread.parentStep} as #${cp.thread.step}: ${describeCheckpoint(cp)}`);
      return true;
    }
    case '/quit':
      return false;
    default:
      out(`unknown command ${name}; try /sessions, /history, /label NAME, /restore ID|NAME, /quit`);
      return true;
  }
}

async function say(text) {
  const head = await session.checkpoint();
  const result = head?.interrupts?.length ? await session.reply(text) : await session.prompt(text);
  await show(result);
}

const restored = await session.checkpoint().catch((e) => fail(`--session ${JSON.stringify(sessionId)}: ${e.name}: ${e.message}`));
out(restored ? `restored: ${describeCheckpoint(restored)}` : `new session "${sessionId}"`);

const rl = createInterface({ input: process.stdin, terminal: process.stdin.isTTY === true });
const prompt = () => { if (process.stdin.isTTY) process.stdout.write('> '); };
prompt();
for await (const line of rl) {
  const text = line.trim();
  try {
    if (text.startsWith('/')) {
      if (!(await command(text))) break;
    } else if (text) {
      await say(text);
    }
  } catch (e) {
    out(e instanceof AgentError ? `${e.name}: ${e.message}` : `error: ${e?.message ?? e}`);
  }
  prompt();
}
rl.close();
trip.free();
