// Resumes a paused lead (team-agent.mjs) in a new process with decisions: prints the result and the tools it ran.
//   node team-child.mjs <checkpoint.json> <decisions.json>
import { readFileSync } from 'node:fs';
import { lead, runs } from './team-agent.mjs';

const [cpFile, decisionsFile] = process.argv.slice(2);
const read = (f) => JSON.parse(readFileSync(f, 'utf8'));
const result = await lead().resume(read(cpFile), { decisions: read(decisionsFile) });
process.stdout.write(JSON.stringify({ result, runs }));
