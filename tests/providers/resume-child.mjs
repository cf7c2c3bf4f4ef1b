// Resumes a checkpoint file in a fresh process: node resume-child.mjs <provider> <baseURL> <file> <answer>
import { readFileSync } from 'node:fs';
import { makeAgent } from './agent-config.mjs';

const [provider, baseURL, file, answer] = process.argv.slice(2);
const result = await makeAgent(provider, baseURL, process.env.TEST_API_KEY).resume(readFileSync(file, 'utf8'), answer);
process.stdout.write(JSON.stringify({ pid: process.pid, result }));
