// `npm run bench [-- --quick] [--repetitions N] [--only CONTENDERS] [--parts PARTS] [--pods N] [--out DIR]
// [--profile DIR]`: starts a local control plane of its own (with kube-controller-manager's Deployment and ReplicaSet
// controllers off, so no pods follow the Deployments, and its garbage collector off, whose GETs of owners it has not
// yet seen would be counted as a controller's reads), runs every scenario for Keelson, controller-runtime, kopf and
// the floor in turn (the churn scenario runs Keelson's PodAlert and a controller-runtime peer of it), and writes
// results.md, chart.svg and results.json.
import { cpus, totalmem, release } from 'node:os';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { RestClient } from '../controller/runtime/rest.ts';
import { LocalCluster } from '../cluster/cluster.ts';
import { apiserverPid } from './process.ts';
import { installSimulationStages } from '../cluster/stages.ts';
import { installCrds } from '../test/support/operator.ts';
import { repoRoot } from '../cluster/paths.ts';
import { Floor } from './floor.ts';
import { controllers } from './implementations.ts';
import { churn } from './churn.ts';
import { ensurePods, podsNamespace } from './namespaces.ts';
import { chart, markdown } from './report.ts';
import { fullSettings, growth, parts, quickSettings, recordGrowthSlopes, repetition, type Bench, type Contender, type Part,
  type Results } from './scenarios.ts';

const { values } = parseArgs({ options: { quick: { type: 'boolean' }, repetitions: { type: 'string' },
  out: { type: 'string' }, only: { type: 'string' }, parts: { type: 'string' }, pods: { type: 'string' },
  profile: { type: 'string' } } });
const settings = { ...(values.quick ? quickSettings : fullSettings) };
if (values.repetitions) settings.repetitions = Number(values.repetitions);
if (values.pods) settings.pods = Number(values.pods);
if (values.parts) settings.parts = values.parts.split(',').map((part) => {
  if (!(parts as readonly string[]).includes(part)) throw new Error(`--parts: ${part} is not one of ${parts.join(', ')}`);
  return part as Part;
});
if (settings.parts.includes('growth') && settings.parts.includes('memory') && settings.pods > settings.growthPods[0]!) {
  throw new Error(`--pods ${settings.pods}: the growth part starts at ${settings.growthPods[0]} pods ` +
    'and cannot shrink the set');
}
const out = values.out ?? join(repoRoot, 'bench/results', values.quick ? 'quick' : '');
const command = ['npm run bench', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' ');
const began = Date.now();
const log = (message: string) => console.log(`[${((Date.now() - began) / 1000).toFixed(0).padStart(5)} s] ${message}`);

log('starting a local control plane for the benchmark');
const cluster = await LocalCluster.start({ realNode: 'off',
  controllers: '*,-deployment-controller,-replicaset-controller,-garbage-collector-controller' });
try {
  await installCrds(cluster);
  const config = new KubeConfig();
  config.loadFromFile(cluster.state.kubeconfig);
  const admin = new RestClient(config, 'keelson-bench');
  const versions = [`Kubernetes ${cluster.state.version} (kube-apiserver, etcd, kwok built from Go modules)`];
  for (const implementation of controllers) {
    log(`preparing ${implementation.name}`);
    versions.push(await implementation.prepare());
  }
  if (settings.parts.includes('memory') || settings.parts.includes('churn')) {
    await ensurePods(admin, podsNamespace, settings.pods, cluster.state.nodes, log);
  }
  if (settings.parts.includes('churn')) await installSimulationStages(cluster);

  const contenders: Contender[] = [...controllers.map((c) => ({ name: c.name, controller: c })),
    { name: 'floor', floor: new Floor(new RestClient(config, 'keelson-bench-floor')) }]
    .filter((c) => !values.only || values.only.split(',').includes(c.name));
  const results: Results = new Map();
  const notes: string[] = [];
  const bench: Bench = { admin, kubeconfig: cluster.state.kubeconfig, nodes: cluster.state.nodes, settings, results, notes, log,
    apiserverPid: apiserverPid(cluster.state.dir) ?? (log('no kube-apiserver process found: bursts report no apiserver CPU'), undefined),
    ...(values.profile ? { profileDir: resolve(values.profile) } : {}) };
  const cpu = cpus();
  const context = {
    command, versions, notes, date: new Date().toISOString().slice(0, 10),
    machine: `${cpu.length} × ${cpu[0]?.model.trim()}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Linux ${release()}`,
  };
  // Written after every contender's turn, so a long run that is stopped keeps what it measured.
  const save = async () => {
    await mkdir(out, { recursive: true });
    await writeFile(join(out, 'results.md'), markdown(results, context));
    await writeFile(join(out, 'chart.svg'), chart(results));
    await writeFile(join(out, 'results.json'), JSON.stringify({ context, settings,
      results: Object.fromEntries([...results].map(([m, row]) => [m, Object.fromEntries(row)])) }, null, 2));
  };
  // Neighbours (Keelson and controller-runtime, kopf and the floor) swap places every other repetition: the two
  // compared run side by side, each first as often, so the machine's drift falls on both alike.
  const inOrder = (rep: number) => (rep % 2 ? contenders : contenders.map((c, i) => contenders[i ^ 1] ?? c));
  for (let rep = 1; rep <= settings.repetitions; rep++) {
    for (const who of inOrder(rep)) {
      await repetition(bench, who, rep);
      if (settings.parts.includes('churn')) await churn(bench, who, rep);
      await save();
    }
  }
  // The growth part last, on one set of pods made larger step by step.
  for (const pods of settings.parts.includes('growth') ? settings.growthPods : []) {
    await ensurePods(admin, podsNamespace, pods, cluster.state.nodes, log);
    for (let rep = 1; rep <= settings.repetitions; rep++) {
      for (const who of inOrder(rep)) {
        await growth(bench, who, rep, pods);
        await save();
      }
    }
  }
  if (settings.parts.includes('growth')) {
    recordGrowthSlopes(results, settings.growthPods);
    await save();
  }
  log(`wrote ${join(out, 'results.md')}`);
  console.log(markdown(results, context));
  admin.close();
} finally {
  await cluster.stop();
}
