// The first request in a fresh workerd isolate, per framework: each framework's minimal Worker (W(1): prompt,
// pause, checkpoint string, resume in a fresh agent, answer) served by a new workerd process `reps` times.
// Also run by run.mjs; standalone: node fresh-workerd.mjs [reps] [framework ...]
import { buildWorker, buildBareWorker, freshWorkerd, runInWorkerd } from './lib/bundle.mjs';
import { finalText, ANSWER } from './lib/workload.mjs';

const expectText = finalText(ANSWER);

/** `{ bare, byFw: { fw: { startupMs, firstMs, secondMs, reps } } }`; bundles built here unless given. */
export async function measureFresh(frameworks, reps = 5, built = {}) {
  // Warm this process's fetch (undici loads on first use) on a throwaway workerd.
  const bareBundle = await buildBareWorker(expectText);
  await runInWorkerd(bareBundle, { nodejsCompat: false, expectText });
  const bare = await freshWorkerd(bareBundle, { nodejsCompat: false, expectText, reps });
  const byFw = {};
  for (const fw of frameworks) {
    const b = built[fw] ?? (await buildWorker(fw));
    const nodejsCompat = built[fw] ? !built[fw].runsWithoutCompat : !(await runInWorkerd(b, { nodejsCompat: false, expectText })).ok;
    byFw[fw] = { ...(await freshWorkerd(b, { nodejsCompat, expectText, reps })), nodejsCompat };
  }
  return { bare, byFw };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const reps = Number(process.argv[2] ?? 5);
  const fws = process.argv.length > 3 ? process.argv.slice(3) : ['ours', 'ai-sdk'];
  const r = await measureFresh(fws, reps);
  const f = (x) => x.toFixed(1);
  console.log(`bare Worker: startup ${f(r.bare.startupMs)} ms, first request ${f(r.bare.firstMs)} ms (median of ${reps} fresh workerd processes)`);
  for (const [fw, m] of Object.entries(r.byFw)) {
    console.log(`${fw}: startup ${f(m.startupMs)} ms (+${f(m.startupMs - r.bare.startupMs)} over bare), first request ${f(m.firstMs)} ms, second ${f(m.secondMs)} ms`);
  }
}
