// Replays session `id` stored in a fileSaver directory, from another process: prints its events as JSON.
//   node replay-child.mjs <dir> <id> [after]
import { agent, scriptedModel, fileSaver } from 'resumable-agent';

const [dir, id, after] = process.argv.slice(2);
const session = agent({ model: scriptedModel([]) }).session(fileSaver({ dir }), id);
const events = [];
for await (const e of session.replay(after ? { after: Number(after) } : {})) events.push(e);
process.stdout.write(JSON.stringify(events));
