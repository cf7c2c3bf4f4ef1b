// Resumes a paused run in a process of its own, as a later request would: the tools come from mcpTools()
// again (with the headers: they are never in the checkpoint), the checkpoint from its JSON text.
// argv: <url> <token|-> <checkpoint file> <answer JSON> [prefix]; prints the outcome as JSON.
import { readFileSync } from 'node:fs';
import { agent, mcpTools } from 'resumable-agent';

const [url, token, file, answer, prefix] = process.argv.slice(2);
const headers = token === '-' ? undefined : { authorization: `Bearer ${token}` };
const tools = await mcpTools({ url, headers, prefix });
const model = async (request) => ({ content: [{ type: 'text', text: `read: ${request.messages.at(-1).content.map((b) => b.content).join(' | ')}` }] });
try {
  const result = await agent({ model, tools }).resume(readFileSync(file, 'utf8'), JSON.parse(answer));
  console.log(JSON.stringify({ interrupted: result.interrupted, text: result.text, checkpoint: result.checkpoint }));
} catch (e) {
  console.log(JSON.stringify({ error: e.name, message: e.message, status: e.status, server: e.server, interruptId: e.interruptId, checkpoint: e.checkpoint }));
}
