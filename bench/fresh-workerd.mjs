// The first request in a fresh workerd isolate, per framework: each framework's minimal Worker (W(1): prompt,
// pause, checkpoint string, resume in a fresh agent, answer) served by a new workerd process `reps` times,
// the frameworks taking turns.
// Also run by run.mjs; standalone: node fresh-workerd.mjs [reps] [framework ...]
import { buildWorker, buildBareWorker, freshWorkerdOnce, runInWorkerd } from './lib/bundle.mjs';
import { median } from './lib/stats.mjs';
import { finalText, ANSWER } from './lib/workload.mjs';

const expectText = finalText(ANSWER);

/**
 * `{ bare, byFw: { fw: { startupMs, firstMs, secondMs, reps } } }` (medians); bundles built here unless given.
 * The repetitions take turns (bare, then each framework, `reps` rounds), so that a slower stretch of the
 * machine reaches every framework alike instead of whichever ran in it.
 */
export async function measureFresh(frameworks, reps = 5, built = {}) {
  // Warm this process's fetch (undici loads on first use) on a throwaway workerd.
  const bareBundle = await buildBareWorker(expectText);
  await runInWorkerd(bareBundle, { nodejsCompat: false, expectText });
  const runs = [{ fw: 'bare', bundle: bareBundle, nodejsCompat: false }];
  for (const fw of frameworks) {
    const b = built[fw] ?? (await buildWorker(fw));
    const nodejsCompat = built[fw] ? !built[fw].runsWithoutCompat : !(await runInWorkerd(b, { nodejsCompat: false, expectText })).ok;
    runs.push({ fw, bundle: b, nodejsCompat });
  }
  const samples = new Map(runs.map((r) => [r.fw, []]));
  for (let i = 0; i < reps; i++) {
    for (const r of runs) samples.get(r.fw).push(await freshWorkerdOnce(r.bundle, { nodejsCompat: r.nodejsCompat, expectText }));
  }
  const summary = (xs) => ({
    reps,
    startupMs: median(xs.map((x) => x.startupMs)),
    firstMs: median(xs.map((x) => x.firstMs)),
    secondMs: median(xs.map((x) => x.secondMs)),
  });
  const byFw = {};
  for (const r of runs.slice(1)) byFw[r.fw] = { ...summary(samples.get(r.fw)), nodejsCompat: r.nodejsCompat };
  return { bare: summary(samples.get('bare')), byFw };
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
