// `npm run cluster -- load`, as `kind load`: an OCI archive of the user's, or an image recipe by name, goes into the
// real node's containerd, and a pod runs it without pulling.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { buildImage } from '../images/oci.ts';
import { toolsImage } from '../images/recipes.ts';
import { repoRoot } from './paths.ts';
import { waitFor } from './wait.ts';
import { freshNamespace, testCluster } from '../test/support/cluster.ts';
import { isReady, withoutRealNode } from '../test/support/real-node.ts';

const cluster = testCluster();
const run = promisify(execFile);
const reference = 'keelson.local/loaded-by-cli:1';

describe('npm run cluster -- load', { skip: withoutRealNode(cluster) }, () => {
  let namespace: string;
  let cleanup: () => Promise<void>;
  let scratch: string;
  before(async () => {
    ({ name: namespace, cleanup } = await freshNamespace(cluster, 'cli-load', { pods: 'real' }));
    scratch = await mkdtemp(join(tmpdir(), 'keelson-cli-load-'));
  });
  after(async () => {
    await cleanup?.();
    await rm(scratch, { recursive: true, force: true });
  });

  /** The CLI as `npm run cluster -- load ...` runs it, from `cwd`. */
  const load = (cwd: string, ...images: string[]) => run(process.execPath, [join(repoRoot, 'build/cluster/cli.js'),
    'load', ...images], { cwd: repoRoot, env: { ...process.env, INIT_CWD: cwd, KEELSON_CLUSTER_DIR: cluster.state.dir } });

  it('loads an archive named relative to where npm ran, and a recipe by name; pods run them unpulled', async () => {
    const { archive } = await buildImage({ ...toolsImage, reference });
    const { stdout } = await load(dirname(archive), basename(archive), 'tools');
    assert.deepEqual(stdout.trim().split('\n'), [`loaded ${archive}`, `loaded ${toolsImage.reference}`]);
    await cluster.kubectl(['apply', '-n', namespace, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Pod',
      metadata: { name: 'loaded' }, spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'loaded', image: reference,
        imagePullPolicy: 'Never', command: ['sleep', '3600'] }] } }) });
    await waitFor('the pod of the loaded image Ready', async () => {
      const pod = await cluster.getJson(namespace, 'pod', 'loaded');
      return pod && isReady(pod);
    }, { timeoutMs: 60_000 });
  });

  it('says what it takes when given neither', async () => {
    const refused = await load(scratch, 'no-such-image.tar').catch((error) => error);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /^no-such-image\.tar: neither an image recipe \(controller, tools, .*\) nor an archive/);
  });
});
