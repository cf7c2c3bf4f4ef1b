// The minimal Worker every framework gets for the bundle-size and cold-start figures: each request runs
// W(1) — prompt, pause on ask_user, checkpoint to a string, resume from it in a fresh agent, final answer.

/** `{ step, worker }` for a framework's `runW`. The cold-start figure calls `step` directly (no
 *  Request/Response, whose first use in Node loads undici and would add the same ~35 ms to every framework). */
export function workerFor(runW, verifyRun) {
  async function step() {
    const r = await runW(1);
    verifyRun(1, r);
    return r.text;
  }
  const worker = {
    async fetch() {
      return new Response(await step(), { headers: { 'content-type': 'text/plain' } });
    },
  };
  return { step, worker };
}
