// npm run cluster -- up | down | status | env | load <image>...
// The cluster lives in .cluster/, or in KEELSON_CLUSTER_DIR (where `npm test` runs its own).
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { repoRoot } from './paths.ts';
import { LocalCluster } from './cluster.ts';
import { isAlive, readState } from './state.ts';
import { probe } from './http.ts';
import { hostLeftovers, sweepHost } from './node/host.ts';
import { importImage } from './node/node.ts';
import { clusterImages } from '../images/recipes.ts';
import { releaseImage } from '../controller/api/release.ts';

const dir = process.env.KEELSON_CLUSTER_DIR || join(repoRoot, '.cluster');

async function up(): Promise<void> {
  const running = LocalCluster.attach(dir);
  if (running) {
    console.log(`already running: ${running.state.server} (Kubernetes ${running.state.version})`);
    // Its node may hold an operator image built from older sources.
    const loaded = await running.refreshOperatorImage();
    if (loaded) console.log(`the node holds this checkout's operator image ${loaded}`);
    return;
  }
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const started = Date.now();
  const cluster = await LocalCluster.startDetached(dir);
  const { realNode } = cluster.state;
  console.log(`local cluster ready in ${((Date.now() - started) / 1000).toFixed(1)}s: ${cluster.state.server} ` +
    `(Kubernetes ${cluster.state.version}, kwok nodes ${cluster.state.nodes.join(', ')}, ` +
    `${'name' in realNode ? `real node ${realNode.name}` : `no real node: ${realNode.skipped}`})`);
  if ('name' in realNode) {
    console.log(`the node holds the operator image ${releaseImage}: kubectl apply -f dist/ and helm install use it as they are`);
  }
  console.log(`kubeconfig: ${cluster.state.kubeconfig}\nnext: eval "$(npm run -s cluster -- env)"`);
}

/** Loads images into the real node, as `kind load` does: a recipe's name (built, or cached) or an OCI archive. */
async function load(): Promise<number> {
  const cluster = LocalCluster.attach(dir);
  const images = process.argv.slice(3);
  if (!cluster || !images.length) {
    console.error(cluster ? `usage: npm run cluster -- load <${Object.keys(clusterImages).join('|')}|archive.tar>...`
      : 'not running (start it with: npm run cluster -- up)');
    return cluster ? 2 : 1;
  }
  const { realNode } = cluster.state;
  if (!('name' in realNode)) {
    console.error(`no real node to load images into: ${realNode.skipped}`);
    return 1;
  }
  for (const image of images) {
    const recipe = clusterImages[image];
    // npm runs scripts from the package's root; a relative archive path is the user's, from where they ran npm.
    const archive = resolve(process.env.INIT_CWD ?? process.cwd(), image);
    if (recipe) {
      console.log(`loaded ${await cluster.loadImage(await recipe())}`);
    } else if (existsSync(archive)) {
      await importImage(realNode.bin, cluster.state.dir, archive);
      console.log(`loaded ${archive}`);
    } else {
      console.error(`${image}: neither an image recipe (${Object.keys(clusterImages).join(', ')}) nor an archive`);
      return 2;
    }
  }
  return 0;
}

async function down(): Promise<void> {
  const cluster = LocalCluster.attach(dir);
  if (cluster) await cluster.stop();
  // A supervisor that was killed left its node's host state behind; a live one elsewhere keeps its own.
  const swept = !cluster && process.getuid?.() === 0 && (await hostLeftovers()).length > 0;
  if (swept) await sweepHost();
  await rm(dir, { recursive: true, force: true });
  console.log(cluster ? 'local cluster stopped' : `no local cluster was running${swept ? '; swept what a killed one left' : ''}`);
}

async function status(): Promise<number> {
  const state = readState(dir);
  if (!state || !isAlive(state.supervisorPid)) {
    console.log('not running (start it with: npm run cluster -- up)');
    return 1;
  }
  console.log(`running: ${state.server} (Kubernetes ${state.version}), folder ${state.dir}`);
  console.log('name' in state.realNode ? `  real node ${state.realNode.name}, containerd ${state.realNode.containerdSocket}`
    : `  no real node: ${state.realNode.skipped}`);
  for (const [name, pid] of Object.entries(state.pids)) {
    console.log(`  ${name.padEnd(24)} pid ${String(pid).padEnd(8)} ${isAlive(pid) ? 'up' : 'DOWN'}  log ${state.logs[name]}`);
  }
  const tls = { ca: join(dir, 'pki/ca.crt'), cert: join(dir, 'pki/admin.crt'), key: join(dir, 'pki/admin.key') };
  const ready = await probe(`${state.server}/readyz`, tls).then((r) => r.status === 200, () => false);
  console.log(`  apiserver /readyz: ${ready ? 'ok' : 'failing'}`);
  return ready ? 0 : 1;
}

function env(): number {
  const state = readState(dir);
  if (!state) {
    console.error('not running (start it with: npm run cluster -- up)');
    return 1;
  }
  console.log(`export KUBECONFIG=${state.kubeconfig}`);
  console.log(`export PATH=${dirname(join(state.bin, 'kubectl'))}:$PATH`);
  return 0;
}

const command = process.argv[2];
const commands: Record<string, () => Promise<number | void> | number> = { up, down, status, env, load };
const action = command ? commands[command] : undefined;
if (!action) {
  console.error('usage: npm run cluster -- up | down | status | env | load <image>...');
  process.exit(2);
}
process.exitCode = (await action()) ?? 0;
