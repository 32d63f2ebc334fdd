// The prerequisite script on a machine that already has everything: it installs nothing, twice, and says what it
// would install when something is missing.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { repoRoot } from './paths.ts';

const script = join(repoRoot, 'cluster/prerequisites.sh');
const run = promisify(execFile);
const ready = await run('bash', [script, 'test', '--dry-run']).then(({ stderr }) => /nothing to install/.test(stderr),
  () => false);
const skip = process.platform !== 'linux' || process.getuid?.() !== 0 || !ready
  ? 'needs Linux, root and every prerequisite installed (CI installs them first)' : false;

let shims: string;
before(async () => {
  // An apt-get that leaves a mark where the script must not call it.
  shims = await mkdtemp(join(tmpdir(), 'keelson-prerequisites-'));
  await writeFile(join(shims, 'apt-get'), `#!/bin/sh\necho "$@" >> ${shims}/apt-get.calls\nexit 1\n`);
  await chmod(join(shims, 'apt-get'), 0o755);
});
after(() => rm(shims, { recursive: true, force: true }));

const withShims = (path: string) => ({ ...process.env, PATH: [shims, path].join(delimiter) });
const aptCalls = () => run('cat', [join(shims, 'apt-get.calls')]).then(({ stdout }) => stdout, () => '');

test('a second run installs nothing and says so', { skip }, async () => {
  for (const purpose of ['cluster', 'test']) {
    for (let i = 0; i < 2; i++) {
      const { stderr } = await run('bash', [script, purpose], { env: withShims(process.env.PATH!) });
      assert.equal(stderr.trim(), `prerequisites: nothing to install (${purpose})`);
    }
  }
  assert.equal(await aptCalls(), '');
});

test('a dry run names what is missing and installs nothing', { skip }, async () => {
  // Without /usr/sbin on the PATH, iptables, nft and useradd look missing.
  const path = process.env.PATH!.split(delimiter).filter((dir) => !dir.endsWith('/sbin')).join(delimiter);
  const { stderr } = await run('bash', [script, 'test', '--dry-run'], { env: withShims(path) });
  assert.equal(stderr.trim(), 'prerequisites: would install iptables nftables passwd with apt-get');
  assert.equal(await aptCalls(), '');
});

test('without root it says in one line what to install and goes on', { skip }, async () => {
  const path = process.env.PATH!.split(delimiter).filter((dir) => !dir.endsWith('/sbin')).join(delimiter);
  const { stdout, stderr } = await run('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'bash', script,
    'cluster'], { env: { ...withShims(path), HOME: shims, GOCACHE: join(shims, 'go') } });
  assert.equal(stdout, '');
  assert.match(stderr, /^prerequisites: the real node needs iptables nftables \(Debian's names; as root: apt-get install iptables nftables\); going on with simulated nodes only\n$/);
  assert.equal(await aptCalls(), '');
});
