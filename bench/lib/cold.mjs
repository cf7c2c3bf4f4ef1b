// Cold start: the whole life of a fresh `node` process (the same binary that runs the benchmark) that imports
// a framework's Node bundle and runs one step; median over RUNS processes, after one unmeasured run that
// warms the OS file cache. `node -e 0` is measured the same way for reference.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { median } from './stats.mjs';

const RUNS = 7;
const CHILD = fileURLToPath(new URL('./cold-run.mjs', import.meta.url));


function timeProcess(args) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', timeout: 30_000 });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${args.join(' ')} exited ${r.status ?? r.signal}: ${r.stderr}`);
  return ms;
}

export function coldStart(bundlePath) {
  const args = [CHILD, bundlePath];
  timeProcess(args);
  const times = Array.from({ length: RUNS }, () => timeProcess(args));
  return { medianMs: median(times), runs: times };
}

export function bareNode() {
  const args = ['-e', '0'];
  timeProcess(args);
  const times = Array.from({ length: RUNS }, () => timeProcess(args));
  return { medianMs: median(times), runs: times };
}
