// The size budgets of the package's .wasm variants (tests/budgets.json): each built variant, gzip -9, within its
// budget; every variant built has a budget, and every budget a variant. The shapes' budgets are checked where they
// are built (tests/build-tools).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const ROOT = new URL('../../', import.meta.url);
const budgets = JSON.parse(readFileSync(new URL('tests/budgets.json', ROOT), 'utf8')).wasmGzipKiB;
const built = Object.fromEntries(readdirSync(new URL('pkg/', ROOT))
  .map((f) => [f.match(/^resumable_agent_(\w+)_bg\.wasm$/)?.[1], f])
  .filter(([name]) => name));

test('every .wasm variant has a budget, and every budget a variant', () => {
  assert.deepEqual(Object.keys(built).sort(), Object.keys(budgets).sort());
});

for (const [name, budget] of Object.entries(budgets)) {
  test(`the ${name} variant is within ${budget} KiB gzip`, () => {
    const file = built[name];
    assert.ok(file, `pkg/ has no ${name} variant`);
    const kib = gzipSync(readFileSync(new URL(`pkg/${file}`, ROOT)), { level: 9 }).length / 1024;
    process.stdout.write(`${name}: ${kib.toFixed(1)} KiB gzip (budget ${budget})\n`);
    assert.ok(kib <= budget, `${file} is ${kib.toFixed(1)} KiB gzip, over its budget of ${budget} KiB (tests/budgets.json)`);
  });
}

test('the core ships no capability it does not have: its glue has no provider, saver or MCP export', () => {
  const glue = readFileSync(new URL('pkg/resumable_agent_core.js', ROOT), 'utf8');
  for (const name of ['providerSpec', 'saverSpec', 'saverCall', 'sessionRun', 'mcpList']) assert.ok(!glue.includes(`export function ${name}(`), `${name} is in the core's glue`);
});
