// examples/cli as a person uses it, with its input piped: a session that survives quitting, its history,
// a label, a restore, and the list of sessions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, readdirSync, statSync } from 'node:fs';
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

test('examples/cli shows what the model says without obeying it, refuses a bad --session in one line, keeps its files private', () => {
  const root = mkdtempSync(join(tmpdir(), 'cli-'));
  const dir = join(root, 'sessions'); // made by the CLI
  try {
    // The scripted model echoes what it is told: an OSC 52 clipboard write, a colour, a bidi override.
    cli(dir, 'esc', ['Plan my holiday', 'Lisbon', '2', '/quit']);
    const evil = 'x\u001b]52;c;ZXZpbA==\u0007y \u001b[31mred\u001b[0m \u202eevil \u009b';
    const out = cli(dir, 'esc', [evil, '/quit']);
    assert.doesNotMatch(out, /[\u001b\u0007\u009b\u202e]/, 'no control character reaches the terminal');
    assert.match(out, /agent: Noted: x\\u\{1b\}\]52;c;ZXZpbA==\\u\{7\}y \\u\{1b\}\[31mred/);
    // A session id the library refuses: one line on stderr, exit code 2, no stack trace.
    const bad = spawnSync(process.execPath, [CLI, '--session', 'a#~b', '--dir', dir], { input: '/quit\n', encoding: 'utf8', timeout: 30_000, env: { ...process.env, MODEL_PROVIDER: '' } });
    assert.equal(bad.status, 2, bad.stderr);
    assert.match(bad.stderr, /^--session "a#~b": .*without "#~"\n$/);
    assert.doesNotMatch(bad.stderr, /\n\s+at /, 'no stack trace');
    // Only the user reads the session files.
    const files = readdirSync(dir).filter((f) => !f.startsWith('.'));
    assert.ok(files.length > 0);
    for (const f of files) assert.equal(statSync(join(dir, f)).mode & 0o077, 0, `${f} is private`);
    assert.equal(statSync(dir).mode & 0o077, 0, 'the directory is private');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
