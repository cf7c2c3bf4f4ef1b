// Adds to pkg/package.json where npm users find the sources and examples: `repository`, `homepage` and `bugs`,
// from Cargo.toml's `repository` (the one place the project's home is written).   node pkg-meta.mjs pkg/package.json
import { readFileSync, writeFileSync } from 'node:fs';

const [file] = process.argv.slice(2);
const repo = /^repository\s*=\s*"([^"]+)"/m.exec(readFileSync('Cargo.toml', 'utf8'))?.[1];
if (!repo) throw new Error('pkg-meta: Cargo.toml has no repository');
const pkg = JSON.parse(readFileSync(file, 'utf8'));
const out = {};
for (const [k, v] of Object.entries(pkg)) {
  out[k] = v;
  if (k === 'license') Object.assign(out, { repository: { type: 'git', url: `git+${repo}.git` }, homepage: `${repo}#readme`, bugs: { url: `${repo}/issues` } });
}
writeFileSync(file, `${JSON.stringify(out, null, 2)}\n`);
