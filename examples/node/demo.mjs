// The reference's "multi-turn loop until complete", where every resume happens in a brand-new process.
//
//   node demo.mjs                  start: prompt, then for each question spawn a new process to resume
//   node demo.mjs --resume ANSWER  one step: read checkpoint.json, resume with ANSWER, write it back
//
// Answers come from the terminal when there is one, else from a canned list (so CI can run it).
import { readFile, writeFile, rm } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { createInterface } from 'node:readline/promises';
import { fileURLToPath } from 'node:url';
import { agent, isInterrupted } from 'resumable-agent';
import { agentConfig } from './agent.mjs';

const file = fileURLToPath(new URL('./checkpoint.json', import.meta.url));

/** Runs one step and reports `{ question }` or `{ answer }`; a pause is saved to checkpoint.json. */
async function step(result) {
  if (isInterrupted(result)) {
    await writeFile(file, JSON.stringify(result.checkpoint, null, 2));
    return { question: result.question };
  }
  await rm(file, { force: true });
  return { answer: result.text, iterations: result.iterations, usage: result.usage };
}

if (process.argv[2] === '--resume') {
  const checkpoint = JSON.parse(await readFile(file, 'utf8'));
  const out = await step(await agent(agentConfig).resume(checkpoint, process.argv[3] ?? ''));
  process.stdout.write(JSON.stringify({ pid: process.pid, ...out }));
} else {
  const canned = ['a recipe-sharing web app', 'the end of Q2'];
  const tty = process.stdin.isTTY ? createInterface({ input: process.stdin, output: process.stdout }) : null;
  console.log(`[process ${process.pid}] prompt: "Plan my project."`);
  let out = { pid: process.pid, ...(await step(await agent(agentConfig).prompt('Plan my project.'))) };
  while (out.question) {
    console.log(`[process ${out.pid}] paused; checkpoint written to ${file}`);
    const answer = tty ? await tty.question(`\n${out.question}\n> `) : canned.shift();
    if (!tty) console.log(`\n${out.question}\n> ${answer}`);
    const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--resume', answer], { encoding: 'utf8' });
    if (child.status !== 0) {
      console.error(child.stderr);
      process.exit(1);
    }
    out = JSON.parse(child.stdout);
    console.log(`[process ${out.pid}] new process: resumed from the file`);
  }
  tty?.close();
  console.log(`\n${out.answer}\n(${out.iterations} model calls, ${out.usage.inputTokens} input / ${out.usage.outputTokens} output tokens)`);
}
