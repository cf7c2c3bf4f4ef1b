// The cold-start child: imports one framework's Node bundle and runs one step, W(1) (prompt, pause,
// checkpoint string, resume on a fresh agent, final answer, verified inside the Worker entry's `step`).
// Exits non-zero if anything is wrong. The parent times the whole process, spawn to exit.
import { pathToFileURL } from 'node:url';

const { step } = await import(pathToFileURL(process.argv[2]).href);
await step();
