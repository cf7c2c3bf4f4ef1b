// Minimal Worker for the bundle-size and cold-start figures, through 'resumable-agent/core': each request runs W(1)
// with ours — prompt, pause on ask_user, checkpoint to a string, resume a fresh agent from it, final answer.
import { runW } from '../frameworks/ours-core.mjs';
import { verifyRun } from '../lib/workload.mjs';
import { workerFor } from '../lib/worker.mjs';

const { step, worker } = workerFor(runW, verifyRun);
export { step };
export default worker;
