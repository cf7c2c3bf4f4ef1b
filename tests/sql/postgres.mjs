// A real Postgres server for the tests: Debian's `postgresql` binaries (scripts/ensure-tools.sh installs them), a
// cluster made in a temporary directory, listening on 127.0.0.1 on a free port, run as a non-root user (the
// `postgres` account when the tests run as root: initdb refuses root), stopped and removed by stop().
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';

/** The newest installed server's bin directory. */
function binDir() {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => existsSync(join(root, v, 'bin/initdb'))) : [];
  if (versions.length === 0) throw new Error('no Postgres server: install Debian\'s postgresql package (make tools does)');
  return join(root, versions.sort((a, b) => Number(b) - Number(a))[0], 'bin');
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Starts a server; answers `{ port, config, stop() }` (`config`: for `new pg.Pool(config)`). */
export async function startPostgres() {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), 'pg-'));
  const data = join(dir, 'data');
  const asRoot = userInfo().uid === 0;
  chmodSync(dir, 0o700);
  if (asRoot) {
    const ids = (what) => Number(execFileSync('id', [what, 'postgres']).toString().trim());
    chownSync(dir, ids('-u'), ids('-g'));
  }
  const run = (tool, args) => {
    const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]] : [join(bin, tool), args];
    const r = spawnSync(cmd, argv, { encoding: 'utf8', timeout: 60_000 });
    if (r.status !== 0) throw new Error(`${tool} failed (${r.status ?? r.signal}): ${r.stderr || r.stdout}`);
  };
  const port = await freePort();
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
  run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-t', '60', '-o',
    `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c max_connections=200`, 'start']);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', '-t', '30', 'stop']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  process.once('exit', stop);
  return { port, config: { host: '127.0.0.1', port, user: 'postgres', database: 'postgres' }, stop };
}
