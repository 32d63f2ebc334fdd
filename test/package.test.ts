// The npm package as its users get it: `npm pack` of this checkout, installed offline into fresh directories. A new
// cdk8s app synthesizes Keelson's install and typed resources from it; the sixth operator in examples/ is built
// from it and runs on the local cluster as its own ServiceAccount, under the RBAC its install synthesizes.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, normalize } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { Yaml } from 'cdk8s';
import { relativeImports } from '../images/controller-tree.ts';
import { freshNamespace, testCluster } from './support/cluster.ts';
import { ControllerProcess } from './support/controller-process.ts';
import { installOffline, nodeLts22, nodeRelease, packCheckout } from './support/npm.ts';
import { releaseImage } from '../controller/api/release.ts';
import { repoRoot } from '../cluster/paths.ts';
import { waitFor } from '../cluster/wait.ts';

const run = promisify(execFile);
const tsc = join(repoRoot, 'node_modules/.bin/tsc');
const exampleDir = join(repoRoot, 'examples/configmap-replicator');
let scratch: string;
let tarball: string;

before(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'keelson-package-'));
  tarball = await packCheckout(scratch);
});
after(() => rm(scratch, { recursive: true, force: true }));

/** A directory holding the packed tarball, for an app to install it from. */
async function appDir(name: string): Promise<string> {
  const dir = join(scratch, name);
  await mkdir(dir);
  await cp(tarball, join(dir, basename(tarball)));
  return dir;
}

describe('the packed package', () => {
  it('holds the compiled library with its type declarations, and nothing of the tests', async () => {
    const files = (await run('tar', ['-tzf', tarball])).stdout.trim().split('\n').map((f) => f.replace(/^package\//, ''));
    for (const entry of ['charts/index', 'controller/runtime/index', 'controller/api/index', 'imports/keelson-keelson.dev']) {
      assert.ok(files.includes(`build/${entry}.js`) && files.includes(`build/${entry}.d.ts`), `${entry} is missing`);
    }
    assert.deepEqual(files.filter((f) => /(^|\/)test\/|\.test\.|\/smoke\.|\.ts$(?<!\.d\.ts)|\.map$/.test(f)), []);
    assert.ok(files.includes('LICENSE'), 'no LICENSE in the package');
    // Every module it loads is in it; only the catalog's loaders of smoke tests (test code) point outside.
    const unpacked = join(scratch, 'unpacked');
    await mkdir(unpacked);
    await run('tar', ['-xzf', tarball, '-C', unpacked]);
    for (const file of files.filter((f) => f.endsWith('.js'))) {
      const { static: eager, dynamic } = relativeImports(await readFile(join(unpacked, 'package', file), 'utf8'));
      for (const specifier of [...eager, ...dynamic.filter((d) => !d.endsWith('/smoke.js'))]) {
        const target = normalize(join(dirname(file), specifier));
        assert.ok(files.includes(target), `${file} imports ${specifier}, which is not in the package`);
      }
    }
    // A cdk8s app's types stop at cdk8s, cdk8s-plus-27 and constructs: nothing of the runtime's dependencies.
    const reached = new Set<string>();
    const packagesReached = new Set<string>();
    const visit = async (file: string) => {
      if (reached.has(file)) return;
      reached.add(file);
      const text = await readFile(join(unpacked, 'package', file), 'utf8');
      for (const [, specifier] of text.matchAll(/(?:from|import\()\s*['"]([^'"]+)['"]/g)) {
        if (specifier!.startsWith('.')) await visit(normalize(join(dirname(file), specifier!)).replace(/\.(ts|js)$/, '.d.ts'));
        else packagesReached.add(specifier!);
      }
    };
    await visit('build/charts/index.d.ts');
    await visit('build/imports/keelson-keelson.dev.d.ts');
    assert.deepEqual([...packagesReached].sort(), ['cdk8s', 'cdk8s-plus-27', 'constructs']);
  });

  it('installs offline into a new cdk8s app, which type-checks against it and synthesizes with it', async () => {
    const dir = await appDir('fresh-app');
    const { peerDependencies } = JSON.parse(await readFile(join(repoRoot, 'package.json'), 'utf8'));
    await installOffline(dir, { name: 'fresh-app', version: '0.0.0', type: 'module', dependencies: peerDependencies,
      devDependencies: { '@types/node': '*' } }, tarball);
    await writeFile(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'es2024', module: 'nodenext',
      strict: true, skipLibCheck: true, outDir: 'build', rootDir: 'src', types: ['node'] }, include: ['src'] }));
    const source = (replicas: string) => `
      import { App, Chart } from 'cdk8s';
      import { KeelsonCrds, KeelsonInstall } from 'keelson';
      import { TdSet } from 'keelson/imports';
      const app = new App({ outdir: 'dist' });
      new KeelsonCrds(new Chart(app, 'crds'), 'crds', { operators: ['tdset'] });
      new KeelsonInstall(new Chart(app, 'keelson'), 'install', { image: 'registry.example/keelson:1.0.0', operators: ['tdset'],
        replicas: ${replicas} });
      new TdSet(new Chart(app, 'apps', { namespace: 'apps' }), 'hello', { metadata: { name: 'hello' }, spec: {
        container: { image: 'nginx:1.27', port: 8080 }, schedulingConfig: [{ startTime: 8, endTime: 18, replica: 3 }] } });
      app.synth();`;
    await mkdir(join(dir, 'src'));
    // The declarations are real types: a string where a number belongs does not compile.
    await writeFile(join(dir, 'src/app.ts'), source('\'two\''));
    const refused = await run(tsc, ['-p', join(dir, 'tsconfig.json')]).catch((error) => error);
    assert.match(refused.stdout, /src\/app\.ts.*Type 'string' is not assignable to type 'number'/);
    await writeFile(join(dir, 'src/app.ts'), source('2'));
    await run(tsc, ['-p', join(dir, 'tsconfig.json')]);
    await run(process.execPath, ['build/app.js'], { cwd: dir });

    const objects = ['crds', 'keelson', 'apps'].flatMap((chart) => Yaml.load(join(dir, 'dist', `${chart}.k8s.yaml`)));
    assert.deepEqual(objects.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => o.metadata.name),
      ['tdsets.keelson.dev']);
    const deployment = objects.find((o) => o.kind === 'Deployment');
    assert.equal(deployment.spec.replicas, 2);
    assert.ok(deployment.spec.template.spec.containers[0].args.includes('--controllers=tdset'));
    const tdset = objects.find((o) => o.kind === 'TDSet');
    assert.deepEqual([tdset.apiVersion, tdset.metadata.namespace], ['keelson.dev/v1alpha1', 'apps']);
  });
});

/** A project as `cdk8s init typescript-app` writes it, from the template of the cdk8s-cli installed here. */
async function cdk8sInitApp(dir: string): Promise<void> {
  const cli = join(repoRoot, 'node_modules/cdk8s-cli');
  const template = join(cli, 'templates/typescript-app');
  const versionOf = async (name: string) =>
    JSON.parse(await readFile(join(cli, 'node_modules', name, 'package.json'), 'utf8').catch(() =>
      readFile(join(repoRoot, 'node_modules', name, 'package.json'), 'utf8'))).version as string;
  const cliManifest = JSON.parse(await readFile(join(cli, 'package.json'), 'utf8'));
  // The values cdk8s init fills in (its determineDeps), taken the same way.
  const values: Record<string, string> = { $base: basename(dir), cdk8s_core_version: await versionOf('cdk8s'),
    cdk8s_plus_version: await versionOf('cdk8s-plus-33'),
    constructs_version: cliManifest.dependencies.constructs.replace('^', ''), cdk8s_cli_spec: `^${cliManifest.version}` };
  for (const file of ['package.json', 'tsconfig.json', 'cdk8s.yaml', 'main.ts']) {
    const text = await readFile(join(template, file), 'utf8');
    await writeFile(join(dir, file), text.replace(/\{\{ *(\$?\w+) *\}\}/g, (_, key: string) => {
      if (values[key] === undefined) throw new Error(`${file}: no value for ${key}`);
      return values[key]!;
    }));
  }
}

describe('in a project exactly as cdk8s init typescript-app makes it (CommonJS, classic module resolution)', () => {
  let dir: string;
  before(async () => {
    dir = await appDir('init-app');
    await cdk8sInitApp(dir);
    const manifest = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'));
    manifest.dependencies.keelson = `file:${basename(tarball)}`;
    await writeFile(join(dir, 'package.json'), JSON.stringify(manifest, null, 2));
    // Its own dependencies (TypeScript 5, ts-node, jest, cdk8s-plus-33) come from the npm registry, as for a user.
    await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'],
      { cwd: dir, timeout: 10 * 60_000 });
    const main = await readFile(join(dir, 'main.ts'), 'utf8');
    await writeFile(join(dir, 'main.ts'), main
      .replace("import { App, Chart, ChartProps } from 'cdk8s';", "$&\nimport { KeelsonCrds, KeelsonInstall } from 'keelson';\n" +
        "import { TdSet } from 'keelson/imports';")
      .replace('// define resources here', `new KeelsonCrds(this, 'crds', { operators: ['tdset'] });
    new KeelsonInstall(this, 'keelson', { operators: ['tdset'] });
    new TdSet(this, 'hello', { metadata: { name: 'hello', namespace: 'apps' }, spec: {
      container: { image: 'nginx:1.27', port: 8080 }, schedulingConfig: [{ startTime: 8, endTime: 18, replica: 3 }] } });`));
  });

  for (const [label, nodeDir] of [['Node 24', async () => dirname(process.execPath)],
    [`Node ${nodeLts22}`, () => nodeRelease(nodeLts22)]] as const) {
    it(`type-checks with its own tsc and synthesizes with cdk8s synth under ${label}`, async () => {
      const env = { ...process.env, PATH: `${await nodeDir()}:${join(dir, 'node_modules/.bin')}:${process.env.PATH}` };
      assert.equal((await run('node', ['--version'], { env })).stdout.trim(),
        label === 'Node 24' ? process.version : `v${nodeLts22}`);
      await rm(join(dir, 'dist'), { recursive: true, force: true });
      await run('npm', ['run', 'compile'], { cwd: dir, env });
      await run('npm', ['run', 'synth'], { cwd: dir, env, timeout: 5 * 60_000 });
      const objects = Yaml.load(join(dir, 'dist/init-app.k8s.yaml'));
      assert.deepEqual(objects.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => o.metadata.name),
        ['tdsets.keelson.dev']);
      const deployment = objects.find((o) => o.kind === 'Deployment');
      assert.equal(deployment.spec.template.spec.containers[0].image, releaseImage);
      assert.equal(objects.find((o) => o.kind === 'TDSet').metadata.namespace, 'apps');
    });
  }
});

describe(`examples/configmap-replicator, built from the package, on the local cluster as its own ServiceAccount, on Node ${nodeLts22}`, () => {
  const cluster = testCluster();
  let dir: string;
  let install: any[];
  let controller: ControllerProcess | undefined;
  const namespaces: { name: string; cleanup: () => Promise<void> }[] = [];

  before(async () => {
    dir = await appDir('configmap-replicator');
    await cp(join(exampleDir, 'src'), join(dir, 'src'), { recursive: true });
    await cp(join(exampleDir, 'tsconfig.json'), join(dir, 'tsconfig.json'));
    await installOffline(dir, JSON.parse(await readFile(join(exampleDir, 'package.json'), 'utf8')), tarball);
    // Its own scripts, as its README says: build with its own TypeScript, synthesize its install.
    await run('npm', ['run', 'synth'], { cwd: dir, env: { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}` } });
    install = [...Yaml.load(join(dir, 'dist/0000-configmap-replicator-crds.k8s.yaml')),
      ...Yaml.load(join(dir, 'dist/0001-configmap-replicator.k8s.yaml'))];
    namespaces.push(...await Promise.all(['cmr-source', 'cmr-a', 'cmr-b'].map((p) => freshNamespace(cluster, p))));
  });
  after(async () => {
    await controller?.stop();
    await Promise.all(namespaces.map((n) => n.cleanup()));
    const cleanup = install?.filter((o) => o.kind !== 'CustomResourceDefinition');
    if (cleanup?.length) {
      await cluster.kubectl(['delete', '--wait=false', '--ignore-not-found', '-f', '-'],
        { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: cleanup }), allowFailure: true });
    }
  });

  it('replicates a ConfigMap, keeps the copies in step, and removes them with its ConfigMapReplication', async () => {
    const [source, a, b] = namespaces.map((n) => n.name) as [string, string, string];
    const crd = install.find((o) => o.kind === 'CustomResourceDefinition');
    const rbac = install.filter((o) => ['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role',
      'RoleBinding'].includes(o.kind));
    await cluster.kubectl(['apply', '--server-side', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List',
      items: [crd, ...rbac] }) });
    await cluster.kubectl(['wait', '--for=condition=Established', '--timeout=60s', `crd/${crd.metadata.name}`]);
    const deployment = install.find((o) => o.kind === 'Deployment');
    const account = install.find((o) => o.kind === 'ServiceAccount').metadata;
    const kubeconfig = await cluster.serviceAccountKubeconfig(account.namespace, account.name, join(dir, 'kubeconfig'));
    // Metrics on loopback, plain, for the test to read (secure metrics have tests of their own).
    const args = (deployment.spec.template.spec.containers[0].args as string[])
      .filter((arg) => !arg.includes('-bind-address') && arg !== '--metrics-secure');
    // On the oldest Node the package's engines allow: every other controller test runs on the pinned Node 24.
    controller = await ControllerProcess.start(join(dir, 'build/main.js'), [...args, `--kubeconfig=${kubeconfig}`],
      { POD_NAMESPACE: account.namespace, POD_NAME: 'configmap-replicator-test' }, join(await nodeRelease(nodeLts22), 'node'));

    const copy = (namespace: string) => cluster.getJson(namespace, 'configmap', 'settings');
    const replication = () => cluster.getJson(source, 'configmapreplication', 'settings');
    await cluster.kubectl(['apply', '-n', source, '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' }, data: { colour: 'blue' } },
      { apiVersion: 'replication.example.com/v1alpha1', kind: 'ConfigMapReplication', metadata: { name: 'settings' },
        spec: { source: 'settings', targetNamespaces: [a, b] } },
    ] }) });
    await waitFor('copies in both namespaces', async () => (await copy(a))?.data?.colour === 'blue' &&
      (await copy(b))?.data?.colour === 'blue', { timeoutMs: 30_000 });
    const ready = await waitFor('Ready with two copies', async () => {
      const status = (await replication())?.status;
      return status?.copies === 2 && status.conditions?.find((c: any) => c.type === 'Ready' && c.status === 'True');
    });
    assert.equal(ready.reason, 'Replicated');
    assert.match((await cluster.kubectl(['get', 'cmr', '-n', source])).stdout, /^settings\s+settings\s+2\s+True\s/m);

    await cluster.kubectl(['patch', 'configmap', 'settings', '-n', source, '--type=merge', '-p', '{"data":{"colour":"green"}}']);
    await waitFor('the copies to follow the source', async () => (await copy(a))?.data?.colour === 'green' &&
      (await copy(b))?.data?.colour === 'green', { timeoutMs: 30_000 });
    await cluster.kubectl(['patch', 'configmapreplication', 'settings', '-n', source, '--type=merge', '-p',
      JSON.stringify({ spec: { targetNamespaces: [a] } })]);
    await waitFor(`the copy in ${b} removed`, async () => (await copy(b)) === undefined, { timeoutMs: 30_000 });

    await cluster.kubectl(['delete', 'configmapreplication', 'settings', '-n', source, '--wait=false']);
    await waitFor('the last copy removed, then the ConfigMapReplication', async () =>
      (await copy(a)) === undefined && (await replication()) === undefined, { timeoutMs: 30_000 });
    assert.equal(await controller.metric('keelson_client_requests_total', { code: '403' }), 0, 'a call was refused');
  });
});
