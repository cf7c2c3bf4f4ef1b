// The workload W(n), shared by every framework: the same prompt, tool results, question, answer and final
// text, so every framework carries exactly the same content. Nothing here depends on a framework.
//
// W(n): the fake model issues n-1 `lookup` calls (one per model call), then one `ask_user` call, which pauses
// the run. The paused state becomes a string; a fresh agent resumes from that string with ANSWER; the model
// then answers with finalText(ANSWER) (~200 bytes). So a run makes n+1 model calls, n of them before the pause.

export const INSTRUCTIONS = 'You are a catalogue assistant. Use lookup for facts; ask the user when a choice is theirs.';
export const PROMPT = 'Compare the catalogue items and recommend one for my trip.';
export const QUESTION = 'Which budget should the recommendation fit: under 100 EUR, or under 250 EUR?';
export const ANSWER = 'Under 250 EUR, please.';
export const N_VALUES = [1, 10, 50, 200];

/** The key the fake model passes to the k-th lookup (k = 0 .. n-2). */
export const lookupKey = (k) => `item-${String(k).padStart(4, '0')}`;

/** The id of the k-th tool call (k = n-1 is the ask_user call). */
export const callId = (k) => `call_${String(k).padStart(4, '0')}`;

const FILLER =
  'Lightweight, water-resistant and packable; suited to multi-day hikes in mixed weather. ' +
  'Reviewers praise the build quality and the warranty service.';

/**
 * What `lookup` returns: a deterministic JSON object of about 500 bytes. Its keys are in sorted order, so its
 * `JSON.stringify` text is also its canonical JSON text (RFC 8785), which is what ours hands the model for an
 * object a tool returns (the same text whichever host ran the tool).
 */
export function lookupResult(key) {
  const n = Number(key.slice(5)) || 0;
  return {
    category: 'outdoor/apparel/jackets',
    inStock: n % 3 !== 0,
    key,
    price: { amount: 89 + (n % 17) * 10, currency: 'EUR' },
    rating: { average: 3.5 + (n % 15) / 10, count: 120 + n },
    sizes: ['S', 'M', 'L', 'XL'],
    sku: `SKU-${(100000 + n * 37).toString(36).toUpperCase()}`,
    summary: FILLER,
    title: `Trail jacket model ${n}`,
    updatedAt: '2025-06-01T12:00:00Z',
    weightGrams: 310 + (n % 9) * 12,
  };
}

/** The lookup result exactly as a JSON string (what a framework hands to the model for an object result). */
export const lookupResultText = (key) => JSON.stringify(lookupResult(key));

/** The final assistant text (~200 bytes). */
export function finalText(answer) {
  return (
    `Recommendation (${answer}): take model 7. It is in stock, weighs 394 g, rates 4.2 from 127 reviews, ` +
    'and fits the budget with room for a rain cover. Models 3 and 12 are close seconds.'
  );
}

/**
 * The fake model's decision, the same for every framework: given how many tool calls the conversation
 * already holds (k), answer with the next one. Stateless, so a fresh model in a fresh process (after resume)
 * answers the same as the original would.
 *   k < n-1  -> { kind: 'lookup', id, key }
 *   k = n-1  -> { kind: 'ask', id, question }
 *   k = n    -> { kind: 'final', text }
 */
export function decide(n, k, answer = ANSWER) {
  if (k < n - 1) return { kind: 'lookup', id: callId(k), key: lookupKey(k) };
  if (k === n - 1) return { kind: 'ask', id: callId(k), question: QUESTION };
  if (k === n) return { kind: 'final', text: finalText(answer) };
  throw new Error(`fake model called with ${k} tool calls for n=${n}`);
}

/**
 * Checks the tool results the final model call saw, as a list of strings in order: the n-1 lookup results
 * (exact JSON text) and then the human's answer. Throws on any difference.
 */
export function checkHistory(n, results, answer = ANSWER) {
  if (results.length !== n) throw new Error(`final model call saw ${results.length} tool results, expected ${n}`);
  for (let k = 0; k < n - 1; k++) {
    const want = lookupResultText(lookupKey(k));
    if (results[k] !== want) throw new Error(`tool result ${k} differs: ${String(results[k]).slice(0, 80)}`);
  }
  if (results[n - 1] !== answer) throw new Error(`last tool result is ${JSON.stringify(results[n - 1])}, not the answer`);
}

/**
 * The floor: a plain message array holding the same content as the paused state (prompt, n-1 tool calls
 * with their results, and the pending ask_user call), in the simplest shape a hand-written loop would keep.
 */
export function floorMessages(n) {
  const messages = [{ role: 'user', content: PROMPT }];
  for (let k = 0; k < n - 1; k++) {
    messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: callId(k), name: 'lookup', input: { key: lookupKey(k) } }] });
    messages.push({ role: 'user', content: [{ type: 'tool_result', toolUseId: callId(k), content: lookupResultText(lookupKey(k)) }] });
  }
  messages.push({ role: 'assistant', content: [{ type: 'tool_use', id: callId(n - 1), name: 'ask_user', input: { question: QUESTION } }] });
  return messages;
}

/** Verifies one runW result against the workload (final text and what the last model call saw). */
export function verifyRun(n, r, answer = ANSWER) {
  if (r.text !== finalText(answer)) throw new Error(`n=${n}: final text differs: ${JSON.stringify(r.text)?.slice(0, 120)}`);
  if (r.lastRequestMessageCount !== r.expectedLastRequestMessageCount) {
    throw new Error(`n=${n}: last model call saw ${r.lastRequestMessageCount} messages, expected ${r.expectedLastRequestMessageCount}`);
  }
  if (typeof r.checkpointString !== 'string' || r.checkpointString.length === 0) throw new Error(`n=${n}: no checkpoint string`);
  if (!(r.pauseMs >= 0) || !(r.resumeFirstCallMs >= 0)) throw new Error(`n=${n}: missing timings`);
}

/** What every framework's runW returns, from the probe and the timings it took. */
export function runResult({ text, probe, expectedLastRequestMessageCount, pauseMs, t1, checkpointString, start, end }) {
  return {
    text,
    lastRequestMessageCount: probe.lastRequestMessageCount,
    expectedLastRequestMessageCount,
    pauseMs,
    resumeFirstCallMs: probe.finalCallAt - t1,
    checkpointString,
    totalMs: end - start,
  };
}
