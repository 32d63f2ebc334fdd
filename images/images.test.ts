import assert from 'node:assert/strict';
import { cp, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { execFile } from 'node:child_process';
import { realNodeUnsupported } from '../cluster/node/host.ts';
import { repoRoot } from '../cluster/paths.ts';
import { relativeImports, removeOutsiders } from './controller-tree.ts';
import { parseDockerfile } from './dockerfile.ts';
import { buildImage, normalizedReference } from './oci.ts';
import { controllerImage } from './recipes.ts';
import { bundleFolder, imageEntries } from './bundle.ts';

const run = promisify(execFile);

describe('the Dockerfile', () => {
  it('states the operator image\'s runtime settings, on the Node release package.json pins', async () => {
    const dockerfile = parseDockerfile(await readFile(join(repoRoot, 'Dockerfile'), 'utf8'));
    const pkg = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8'));
    assert.equal(dockerfile.from, `node:${pkg.devDependencies.node}-bookworm-slim`);
    assert.equal(dockerfile.user, '65532:65532');
    assert.deepEqual(dockerfile.entrypoint, ['node', '--max-semi-space-size=1',
      `build/controller/${bundleFolder}/main.js`]);
    assert.deepEqual(dockerfile.exposedPorts, [8080, 8081]);
    assert.equal(dockerfile.env?.NODE_ENV, 'production');
  });

  it('bundles the closed controller tree as the recipe does, and carries the bundle alone', async () => {
    const text = await readFile(join(repoRoot, 'Dockerfile'), 'utf8');
    const finalStage = text.slice(text.lastIndexOf('\nFROM '));
    assert.match(text.slice(0, -finalStage.length), /^RUN .*node build\/images\/bundle\.js build\/controller$/m);
    assert.match(finalStage, new RegExp(`^COPY --from=build /src/build/controller/${bundleFolder} ` +
      `\\./build/controller/${bundleFolder}$`, 'm'));
    assert.doesNotMatch(finalStage, /npm|node_modules/);
  });
});

describe('the bundle the image runs', () => {
  it('loads every operator and the member agent with no node_modules, laid out as the image lays it out', async () => {
    const app = await mkdtemp(join(tmpdir(), 'keelson-bundle-'));
    const node = (script: string, ...args: string[]) => run(process.execPath, [join(app, 'build/controller', bundleFolder,
      script), ...args], { cwd: app, env: { PATH: process.env.PATH } }).then(() => '',
      (e: { stdout: string; stderr: string }) => e.stdout + e.stderr);
    try {
      const tree = join(app, 'build/controller');
      await cp(join(repoRoot, 'build/controller'), tree, { recursive: true });
      // The Dockerfile's own command, from the folder its build stage runs it in.
      const [, script, argument] = /node (build\/images\/bundle\.js) (\S+)$/m.exec(await readFile(join(repoRoot, 'Dockerfile'),
        'utf8'))!;
      await run(process.execPath, [join(repoRoot, script!), argument!], { cwd: app });
      await cp(join(repoRoot, 'package.json'), join(app, 'package.json'));
      for (const entry of await readdir(tree)) if (entry !== bundleFolder) await rm(join(tree, entry), { recursive: true });
      const bundled = await readdir(join(tree, bundleFolder));
      for (const entry of imageEntries) assert.ok(bundled.includes(basename(entry)), `${entry} is not in the bundle`);
      // Of client-node, the KubeConfig module without the generated clients and the transports the controller never
      // runs. The maps name client-node's own TypeScript, through its source maps.
      const sources = (await Promise.all(bundled.filter((f) => f.endsWith('.js.map')).map(async (f) =>
        (JSON.parse(await readFile(join(tree, bundleFolder, f), 'utf8')) as { sources: string[] }).sources))).flat();
      assert.ok(sources.some((s) => /client-node\/(dist|src)\/config\.[jt]s$/.test(s)), 'no KubeConfig in the bundle');
      const leftOut = new RegExp(String.raw`node_modules/(undici|socks|socks-proxy-agent|hpagent)/|` +
        String.raw`client-node/(dist|src)/gen/(index\.[jt]s$|apis/|models/)`);
      assert.deepEqual(sources.filter((s) => leftOut.test(s)), []);
      // Every operator runs by default: each is loaded before the kubeconfig is read, which is not there.
      assert.match(await node('main.js', '--kubeconfig=/nonexistent/kubeconfig'), /no such file[^"]*\/nonexistent\/kubeconfig/);
      assert.match(await node('agent-main.js'), /MEMBER is not set/);
    } finally {
      await rm(app, { recursive: true, force: true });
    }
  });
});

describe('the controller tree the image ships', () => {
  it('reads imports, static and dynamic, as the compiler writes them', () => {
    const source = `import { a } from './a.js';\nexport * from "../b.js";\nimport fs from 'node:fs';\n` +
      `const m = await import('../../test/c.js');\n// from './comment.js'\nconst text = 'import x from "./d.js"';\n`;
    assert.deepEqual(relativeImports(source), { static: ['./a.js', '../b.js'], dynamic: ['../../test/c.js'] });
  });

  it('leaves out tests, type declarations, smoke tests, samples and `npm start`; what it keeps loads only what it keeps',
    async () => {
    const tree = await mkdtemp(join(tmpdir(), 'keelson-controller-tree-'));
    try {
      await cp(join(repoRoot, 'build/controller'), tree, { recursive: true });
      const removed = await removeOutsiders(tree);
      for (const file of ['start.js', 'start.js.map', 'runtime/informer.test.js', 'operators/tdset/smoke.js',
        'operators/clusterpodalert/smoke.js',
        'operators/tdset/sample.js', 'operators/podalert/health.test.js', 'runtime/manager.d.ts']) {
        assert.ok(removed.includes(file), `${file} is still in the image`);
      }
      const kept = (await readdir(tree, { recursive: true })).filter((f) => f.endsWith('.js'));
      for (const file of ['main.js', 'operators/catalog.js', 'operators/tdset/reconcile.js', 'runtime/manager.js']) {
        assert.ok(kept.includes(file), `${file} is missing from the image`);
      }
      for (const file of kept) {
        for (const specifier of relativeImports(await readFile(join(tree, file), 'utf8')).static) {
          const target = resolve(dirname(join(tree, file)), specifier).slice(tree.length + 1);
          assert.ok(kept.includes(target), `${file} imports ${specifier}, which the image does not carry`);
        }
      }
    } finally {
      await rm(tree, { recursive: true, force: true });
    }
  });
});

describe('image references', () => {
  it('are spelled as the kubelet and containerd spell them', () => {
    assert.equal(normalizedReference('keelson/controller:0.1.0'), 'docker.io/keelson/controller:0.1.0');
    assert.equal(normalizedReference('busybox:1.36'), 'docker.io/library/busybox:1.36');
    assert.equal(normalizedReference('keelson.local/tools:1'), 'keelson.local/tools:1');
    assert.equal(normalizedReference('localhost:5000/a:1'), 'localhost:5000/a:1');
  });
});

describe('the operator image', { skip: realNodeUnsupported() ?? false }, () => {
  it('is reproducible, and carries the Dockerfile\'s settings', async () => {
    const recipe = await controllerImage();
    const caches = [await mkdtemp(join(tmpdir(), 'keelson-images-')), await mkdtemp(join(tmpdir(), 'keelson-images-'))];
    const previous = process.env.XDG_CACHE_HOME;
    try {
      const digests: string[] = [];
      for (const cache of caches) {
        process.env.XDG_CACHE_HOME = cache;
        digests.push((await buildImage(recipe)).digest);
      }
      assert.equal(digests[0], digests[1], 'two builds of the same inputs differ');

      const layout = join(caches[0]!, 'layout');
      const archive = (await buildImage(recipe)).archive;
      await mkdir(layout);
      await run('tar', ['-xf', archive, '-C', layout]);
      const blob = (digest: string) => readFile(join(layout, 'blobs', ...digest.split(':')), 'utf8').then(JSON.parse);
      const manifest = await blob(digests[0]!);
      const { config } = await blob(manifest.config.digest);
      const dockerfile = parseDockerfile(await readFile(join(repoRoot, 'Dockerfile'), 'utf8'));
      assert.equal(config.User, dockerfile.user);
      assert.equal(config.WorkingDir, dockerfile.workingDir);
      assert.deepEqual(config.Entrypoint, dockerfile.entrypoint);
      assert.deepEqual(Object.keys(config.ExposedPorts), dockerfile.exposedPorts!.map((p) => `${p}/tcp`));
      for (const [name, value] of Object.entries(dockerfile.env!)) assert.ok(config.Env.includes(`${name}=${value}`), name);
    } finally {
      if (previous === undefined) delete process.env.XDG_CACHE_HOME;
      else process.env.XDG_CACHE_HOME = previous;
      await Promise.all(caches.map((c) => rm(c, { recursive: true, force: true })));
    }
  });
});
