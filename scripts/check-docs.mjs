// `make test` (test-docs): every code block of README.md and docs/*.md is checked, so the docs cannot drift.
//
// - ```js / ```ts blocks are type-checked against the package's own types (index.d.ts), each as a module of
//   its own. Names a snippet uses without defining (a `config`, the Worker's `env`, …) are declared `any` for
//   it, so what is checked is every call into the package: its names, its options, their types.
// - A block whose info string says `run` (```js run) is also executed with Node from a scratch directory
//   (it imports the built package by name); when a ```text block follows it directly, that is its output.
// - ```json / ```jsonc blocks must parse (comments stripped).
// - ```rust blocks are doctests (src/lib.rs includes these files under cfg(doctest)).
// - Blocks without a language, ```text, ```sh and ```console are shown, not checked.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'target', 'docs-check');
const FILES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => join('docs', f))];
// ```sql: the SQL savers' schema, checked against the table sqliteSaver makes (tests/sql/sql.test.mjs).
const SHOWN = new Set(['text', 'sh', 'console', 'rust', 'diff', 'sql']);

/** Every fenced block of `file`: its language, flags, body and line. */
function blocks(file) {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const out = [];
  const fence = /^```([^\n]*)\n([\s\S]*?)^```[ \t]*$/gm;
  for (let m; (m = fence.exec(text)); ) {
    const [lang = '', ...flags] = m[1].trim().split(/\s+/);
    out.push({ file, lang, flags, body: m[2], line: text.slice(0, m.index).split('\n').length, end: fence.lastIndex });
  }
  // A ```text block right after a run block is its expected output.
  for (let i = 0; i + 1 < out.length; i++) {
    const gap = text.slice(out[i].end, text.indexOf('```', out[i].end)).trim();
    if (out[i].flags.includes('run') && out[i + 1].lang === 'text' && gap === '') out[i].output = out[i + 1].body;
  }
  return out;
}

/** The names a snippet declares at its top level or imports (so they are not declared for it again). */
function declared(body) {
  const names = new Set();
  for (const m of body.matchAll(/\b(?:const|let|var|using|function\*?|class|async function)\s+([A-Za-z_$][\w$]*)/g)) names.add(m[1]);
  for (const m of body.matchAll(/\b(?:const|let|var)\s*\{([^}]*)\}/g)) for (const n of m[1].split(',')) names.add(n.split(':').pop().trim());
  for (const m of body.matchAll(/\bimport\s*\{([^}]*)\}/g)) for (const n of m[1].split(',')) names.add(n.replace(/^type\s+/, '').split(/\s+as\s+/).pop().trim());
  for (const m of body.matchAll(/\bimport\s+([A-Za-z_$][\w$]*)\s+from/g)) names.add(m[1]);
  return names;
}

/** What snippets take as given (the reader's own config, UI, env…), declared `any` unless they define it. The
 * package's names are not among them: a snippet imports what it uses, so it runs as pasted. */
const AMBIENT = [
  'env', 'ctx', 'request', 'config', 'tools', 'model', 'saver', 'id', 'result', 'checkpoint', 'answer', 'text',
  'sessionId', 'signal', 'ui', 'log', 'mailer', 'authenticate', 'mySaver', 'outcome', 'a', 'db', 'pool', 'forecast', 'message', 'classify', 'searchApi', 'weather', 'flights', 'hotels', 'cheapModel',
];

const failures = [];
const all = FILES.flatMap(blocks);
rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });

// ---- JSON: parsed; a checkpoint is resumed by the package --------------------------------------------
const checkpoints = [];
for (const b of all.filter((b) => b.lang === 'json' || b.lang === 'jsonc')) {
  const stripped = b.body.replace(/("(?:\\.|[^"\\])*")|\/\/[^\n]*/g, (m, str) => str ?? '');
  try {
    const value = JSON.parse(stripped.replace(/,(\s*[}\]])/g, '$1'));
    if (value && Array.isArray(value.messages)) checkpoints.push([b, value]);
  } catch (e) {
    failures.push(`${b.file}:${b.line}: not JSON: ${e.message}`);
  }
}
for (const [b, value] of checkpoints) {
  // Every tool it names answers 'ok'; the model answers once. A CheckpointError fails the docs.
  const script = `import { agent, defineTool } from 'resumable-agent';
const cp = ${JSON.stringify(value)};
const names = new Set(cp.messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((c) => c.type === 'tool_use').map((c) => c.name));
const tools = [...names].map((name) => defineTool({ name, handle: () => 'ok' }));
const r = await agent({ tools, model: async () => ({ content: [{ type: 'text', text: 'done' }] }) }).resume(cp, 'June');
if (r.text !== 'done') throw new Error('did not complete');`;
  const dir = join(OUT, `checkpoint-${b.line}`);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'resume.mjs'), script);
  const r = spawnSync(process.execPath, [join(dir, 'resume.mjs')], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) failures.push(`${b.file}:${b.line}: the checkpoint does not resume:\n${r.stderr.slice(0, 1500)}`);
}

// ---- JS / TS: type-checked, each a module ---------------------------------------------------------------
const code = all.filter((b) => ['js', 'ts', 'javascript', 'typescript'].includes(b.lang));
const names = [];
code.forEach((b, i) => {
  const own = declared(b.body);
  const prelude = AMBIENT.filter((n) => !own.has(n)).map((n) => `declare const ${n}: any;`).join(' ');
  const name = `block-${String(i).padStart(2, '0')}.ts`;
  names.push([name, b]);
  writeFileSync(join(OUT, name), `${prelude} export {};\n${b.body}`);
});
writeFileSync(join(OUT, 'tsconfig.json'), JSON.stringify({
  compilerOptions: {
    target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: false, noImplicitAny: false,
    noEmit: true, skipLibCheck: true, types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')],
    lib: ['ES2022', 'DOM', 'ESNext.Disposable'],
  },
  include: ['*.ts'],
}));
const tsc = spawnSync(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', OUT], { encoding: 'utf8' });
if (tsc.status !== 0) {
  // Name the doc line of each error, not the scratch file's.
  for (const line of tsc.stdout.split('\n').filter(Boolean)) {
    const m = line.match(/(block-\d+\.ts)\((\d+),(\d+)\): (.*)/);
    const b = m && names.find(([n]) => n === m[1])?.[1];
    failures.push(b ? `${b.file}:${b.line + Number(m[2]) - 1}: ${m[4]}` : line);
  }
}

// ---- run blocks: executed -------------------------------------------------------------------------------
for (const b of code.filter((b) => b.flags.includes('run'))) {
  const dir = join(OUT, `run-${b.line}`);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'snippet.mjs');
  writeFileSync(file, b.body);
  const r = spawnSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) {
    failures.push(`${b.file}:${b.line}: the block fails when run (${r.status ?? r.signal}):\n${r.stderr.slice(0, 2000)}`);
  } else if (b.output !== undefined && r.stdout.trim() !== b.output.trim()) {
    failures.push(`${b.file}:${b.line}: printed\n${r.stdout}\ninstead of the output shown after it:\n${b.output}`);
  }
}

const counts = `${code.length} JS/TS blocks type-checked, ${code.filter((b) => b.flags.includes('run')).length} run, `
  + `${all.filter((b) => b.lang.startsWith('json')).length} JSON parsed (${checkpoints.length} checkpoint resumed), `
  + `${all.filter((b) => b.lang === 'rust').length} Rust (doctests)`;
const unknown = all.filter((b) => !SHOWN.has(b.lang) && !['js', 'ts', 'javascript', 'typescript', 'json', 'jsonc'].includes(b.lang));
for (const b of unknown) failures.push(`${b.file}:${b.line}: a \`\`\`${b.lang} block: give it a language the check knows, or text`);
if (failures.length) {
  console.error(`docs: ${failures.length} problem(s) (${counts}):\n${failures.join('\n')}`);
  process.exit(1);
}
console.log(`docs: ${counts} — ${FILES.map((f) => relative(ROOT, join(ROOT, f))).join(', ')}`);
