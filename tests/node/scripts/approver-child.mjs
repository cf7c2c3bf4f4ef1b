// Resumes a paused payments run in a new process as one approver: prints the result (and the tools it ran) as JSON.
//   node approver-child.mjs <checkpoint.json> <script.json> <decisions.json>
import { readFileSync } from 'node:fs';
import { paymentsAgent, runs } from './payments-agent.mjs';

const [cpFile, scriptFile, decisionsFile] = process.argv.slice(2);
const read = (f) => JSON.parse(readFileSync(f, 'utf8'));
const result = await paymentsAgent(read(scriptFile)).resume(read(cpFile), { decisions: read(decisionsFile) });
process.stdout.write(JSON.stringify({ result, runs, pid: process.pid }));
