// Minimal Worker for the bundle-size and cold-start figures: each request runs W(1) with openai-agents —
// prompt, pause on ask_user, checkpoint to a string, resume a fresh agent from it, final answer.
import { runW } from '../frameworks/openai-agents.mjs';
import { verifyRun } from '../lib/workload.mjs';

/** One step: W(1), verified. The cold-start figure calls this directly (no Request/Response, whose first use
 *  in Node loads undici and would add the same ~35 ms to every framework). */
export async function step() {
  const r = await runW(1);
  verifyRun(1, r);
  return r.text;
}

export default {
  async fetch() {
    return new Response(await step(), { headers: { 'content-type': 'text/plain' } });
  },
};
