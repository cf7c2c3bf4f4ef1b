// examples/cli as a person uses it, with its input piped: a session that survives quitting, its history,
// a label, a restore, and the list of sessions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../examples/cli', import.meta.url));

function cli(dir, session, lines) {
  const r = spawnSync(process.execPath, [CLI, '--session', session, '--dir', dir], {
    input: `${lines.join('\n')}\n`, encoding: 'utf8', timeout: 30_000, env: { ...process.env, MODEL_PROVIDER: '' },
  });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

test('examples/cli: quit, come back, continue; history, label, restore; sessions', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cli-'));
  try {
    let out = cli(dir, 'trip', ['Plan my holiday', '/quit']);
    assert.match(out, /^new session "trip"\nagent asks: Which city are you visiting\?\n$/);

    out = cli(dir, 'trip', ['Lisbon', '/label asked-days', '/quit']);
    assert.match(out, /^restored: 2 messages, paused on "Which city are you visiting\?"\n/);
    assert.match(out, /agent asks: How many days\?\n/);
    assert.match(out, /labelled #\d+ "asked-days"/);

    out = cli(dir, 'trip', ['4', '/history', '/restore asked-days', '3', '/sessions']);
    assert.match(out, /restored: 4 messages, paused on "How many days\?"/);
    assert.match(out, /agent: Plan: 4 days in Lisbon\./);
    assert.match(out, /#\d+ \[asked-days\]: 4 messages, paused on "How many days\?"/, 'the label shows in the history');
    assert.match(out, /restored #\d+ as #\d+: 4 messages, paused on "How many days\?"/);
    assert.match(out, /agent: Plan: 3 days in Lisbon\./, 'a new branch from the labelled step');
    assert.match(out, /  trip \(this one\): 6 messages, updated \d{4}-\d\d-\d\d \d\d:\d\d\n/);

    out = cli(dir, 'other', ['hello', '/sessions', '/quit']);
    assert.match(out, /  other \(this one\): 2 messages, updated .*, paused on "Which city are you visiting\?"/);
    assert.match(out, /  trip: 6 messages/);
    assert.match(cli(dir, 'trip', ['/restore nowhere', '/bogus']), /ConfigError: restore: session "trip" has no step or label "nowhere"[\s\S]*unknown command \/bogus/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
