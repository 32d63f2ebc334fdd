// Starts one local control plane, reports READY with its state on stdout, and tears it down on SIGTERM/SIGINT,
// or when stdin closes under --watch-stdin (the parent died, however it died).
import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { GiveUp, waitFor } from './wait.ts';
import { freePort } from './ports.ts';
import {
  etcd, kubeApiserver, kubeControllerManager, kubeScheduler, kwok, kwokNodeAnnotation, simulatedNodeTaint,
  type ComponentSpec, type Layout,
} from './components.ts';
import { probe, type ClientTls } from './http.ts';
import { makePki } from './pki.ts';
import { ManagedProcess } from './process.ts';
import { nodeHeartbeatStage } from './stages.ts';
import { nodeNames, stateFile, type ClusterState } from './state.ts';
import { buildImage } from '../images/oci.ts';
import { buildBinaries } from './build.ts';
import { controllerImage, helloWorldImage, pauseImage, toolsImage } from '../images/recipes.ts';
import { nodeNetwork, realNodeUnsupported, sweepHost, takeNode } from './node/host.ts';
import { createBucket, objectStoreComponent, objectStoreObjects, type ObjectStore } from './node/objectstore.ts';
import {
  containerdSocket, importImage, nodeAddonObjects, nodeComponents, realNodeName, type NodePorts,
} from './node/node.ts';

const started = Date.now();
/** Progress on stderr, with the time since start: a cold start builds for minutes. */
function progress(line: string): void {
  process.stderr.write(`[local cluster ${((Date.now() - started) / 1000).toFixed(0)}s] ${line}\n`);
}

async function freePorts<Name extends string>(names: readonly Name[]): Promise<Record<Name, number>> {
  const ports = new Set<number>();
  while (ports.size < names.length) ports.add(await freePort());
  const chosen = [...ports];
  return Object.fromEntries(names.map((name, i) => [name, chosen[i]])) as Record<Name, number>;
}

function kubeconfigFor(server: string, tls: ClientTls): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'keelson-local', cluster: { server, 'certificate-authority': tls.ca } }],
    users: [{ name: 'keelson-admin', user: { 'client-certificate': tls.cert, 'client-key': tls.key } }],
    contexts: [{ name: 'keelson-local', context: { cluster: 'keelson-local', user: 'keelson-admin' } }],
    'current-context': 'keelson-local',
  }, null, 2);
}

/** A kwok node. Beside a real node it is tainted as kwok's own convention has it, so that only pods that ask for
 * simulated nodes land there (see simulatedPodsAnnotations). */
function nodeManifest(name: string, tainted: boolean): object {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [kwokNodeAnnotation]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok' },
    },
    spec: tainted ? { taints: [simulatedNodeTaint] } : {},
  };
}

/** The real node, when this cluster has one: its binaries and its own ports. */
interface RealNode {
  bin: string;
  ports: NodePorts;
}

class Supervisor {
  private readonly processes: ManagedProcess[] = [];
  private stopping: Promise<void> | undefined;

  constructor(private readonly layout: Layout, private readonly removeDir: boolean,
    private readonly node: RealNode | { skipped: string }) {}

  private get tls(): ClientTls {
    const { pki } = this.layout;
    return { ca: pki.caCert, cert: pki.adminCert, key: pki.adminKey };
  }

  kubectl(...args: (string | { input: string })[]): Promise<string> {
    const input = args.find((a) => typeof a === 'object')?.input;
    const flags = args.filter((a): a is string => typeof a === 'string');
    return new Promise((resolve, reject) => {
      const child = execFile(join(this.layout.bin, 'kubectl'), [`--kubeconfig=${this.layout.kubeconfig}`, ...flags],
        { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 },
        (error, stdout, stderr) => (error ? reject(new Error(`kubectl ${flags.join(' ')}: ${stderr || error.message}`)) : resolve(stdout)));
      child.stdin!.end(input ?? '');
    });
  }

  private async launch(spec: ComponentSpec, env?: NodeJS.ProcessEnv): Promise<void> {
    const proc = new ManagedProcess(spec.name, spec.command, spec.args, join(this.layout.dir, 'logs', `${spec.name}.log`),
      spec.env ? { ...(env ?? process.env), ...spec.env } : env);
    this.processes.push(proc);
    proc.start();
    const { health } = spec;
    if (!health) return;
    const tls = health.startsWith(`https://${this.layout.address}:${this.layout.ports.apiserver}/`) ? this.tls : undefined;
    await waitFor(`${spec.name} to answer ${health}`, async () => {
      if (proc.exitedWith !== undefined) throw new GiveUp(`${spec.name} exited with code ${proc.exitedWith}`);
      return (await probe(health, tls)).status === 200;
    }, { timeoutMs: 90_000, intervalMs: 100 });
    progress(`${spec.name} ready`);
  }

  private async apply(objects: object[]): Promise<void> {
    await this.kubectl('apply', '--server-side', '-f', '-', { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }) });
  }

  /**
   * containerd with the node's images, the kubelet, then the Services, DNS and storage that pods expect. The images
   * include the operator's own, under the reference dist/ and the chart name, so that their installs work here
   * unchanged, as after `kind load`. Last, the object store.
   */
  private async startNode(node: RealNode): Promise<ObjectStore> {
    const { layout } = this;
    const images = Promise.all([pauseImage(join(node.bin, 'pause')), toolsImage, helloWorldImage, controllerImage()]
      .map(async (recipe) => buildImage(await recipe, progress)));
    await this.apply(nodeAddonObjects());
    const [containerd, kubelet, ...addons] = await nodeComponents({ dir: layout.dir, bin: node.bin,
      adminKubeconfig: layout.kubeconfig, server: `https://${layout.address}:${layout.ports.apiserver}`,
      pki: layout.pki as Required<typeof layout.pki>, ports: node.ports });
    // The runc shim is found on PATH.
    await this.launch(containerd!, { ...process.env, PATH: `${node.bin}:${process.env.PATH}` });
    const built = await images;
    for (const image of built) await importImage(node.bin, layout.dir, image.archive);
    progress(`images loaded into the node: ${built.map((i) => i.reference).join(', ')}`);
    await this.launch(kubelet!);
    // The kubelet registers its Node a moment after it starts: kubectl wait would fail at once on NotFound.
    await waitFor(`node ${realNodeName} to register and be Ready`, async () => (await this.kubectl('get', 'node',
      realNodeName, '-o', 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')) === 'True', { timeoutMs: 120_000 });
    progress(`node ${realNodeName} Ready`);
    for (const addon of addons) await this.launch(addon);
    const { component, store } = await objectStoreComponent({ dir: layout.dir, bin: node.bin,
      port: node.ports.objectStore, ca: layout.pki.caCert, tls: layout.pki.node!.objectStore });
    await this.launch(component);
    await this.apply(await objectStoreObjects(store, node.ports.objectStore));
    await createBucket(store);
    return store;
  }

  async start(): Promise<ClusterState> {
    const { layout, node } = this;
    if ('skipped' in node) progress(`no real node: ${node.skipped}; pods run on kwok nodes only`);
    await this.launch(etcd(layout));
    await this.launch(kubeApiserver(layout));

    // kwok reads its stages, logs and exec settings as custom resources; they must exist before it starts.
    await this.kubectl('apply', '--server-side', '-f', join(layout.bin, 'kwok-crds'));
    await this.kubectl('wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all');
    await this.kubectl('apply', '--server-side', '-f', join(layout.bin, 'kwok-stages'));
    await this.kubectl('apply', '--server-side', '-f', '-', { input: JSON.stringify(nodeHeartbeatStage) });
    const nodes = join(layout.dir, 'nodes.json');
    await writeFile(nodes, JSON.stringify({ apiVersion: 'v1', kind: 'List',
      items: nodeNames.map((name) => nodeManifest(name, !('skipped' in node))) }));
    await this.kubectl('apply', '--server-side', '-f', nodes);

    await Promise.all([kubeControllerManager(layout), kubeScheduler(layout), kwok(layout)].map((spec) => this.launch(spec)));
    await this.kubectl('wait', '--for=condition=Ready', '--timeout=60s', ...nodeNames.map((n) => `node/${n}`));
    // Pods are refused in a namespace until the controller-manager has made its default ServiceAccount.
    await waitFor('the default ServiceAccount', () => this.kubectl('get', 'serviceaccount', 'default', '-n', 'default'),
      { timeoutMs: 60_000 });
    const objectStore = 'skipped' in node ? undefined : await this.startNode(node);

    const version = JSON.parse(await this.kubectl('version', '-o', 'json')).serverVersion.gitVersion as string;
    const state: ClusterState = {
      supervisorPid: process.pid,
      dir: layout.dir,
      bin: layout.bin,
      kubeconfig: layout.kubeconfig,
      server: `https://${layout.address}:${layout.ports.apiserver}`,
      etcd: `http://127.0.0.1:${layout.ports.etcdClient}`,
      ports: layout.ports,
      nodes: [...nodeNames],
      realNode: 'skipped' in node ? node
        : { name: realNodeName, bin: node.bin, containerdSocket: containerdSocket(layout.dir), objectStore: objectStore! },
      version,
      pids: Object.fromEntries(this.processes.map((p) => [p.name, p.pid ?? -1])),
      logs: Object.fromEntries(this.processes.map((p) => [p.name, p.logFile])),
    };
    await writeFile(stateFile(layout.dir), JSON.stringify(state, null, 2));
    return state;
  }

  tails(): string {
    return this.processes.map((p) => `--- ${p.name} (${p.logFile}) ---\n${p.tail()}`).join('\n');
  }

  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (const proc of [...this.processes].reverse()) await proc.stop();
      if (!('skipped' in this.node)) await sweepHost();
      if (this.removeDir) await rm(this.layout.dir, { recursive: true, force: true });
      else await rm(stateFile(this.layout.dir), { force: true });
    })();
    return this.stopping;
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { dir: { type: 'string' }, 'remove-dir': { type: 'boolean' }, 'watch-stdin': { type: 'boolean' },
      controllers: { type: 'string' }, 'real-node': { type: 'string', default: 'auto' } },
  });
  if (!values.dir || !['auto', 'off'].includes(values['real-node']!)) {
    throw new Error('usage: supervisor --dir DIR [--remove-dir] [--watch-stdin] [--controllers LIST] [--real-node auto|off]');
  }
  const dir = values.dir;
  await mkdir(join(dir, 'logs'), { recursive: true });
  await mkdir(join(dir, 'pki'), { recursive: true, mode: 0o700 });

  const bin = await buildBinaries('control-plane');
  const unsupported = values['real-node'] === 'off' ? 'not asked for (--real-node=off)' : realNodeUnsupported();
  let node: RealNode | { skipped: string } = { skipped: unsupported ?? '' };
  if (!unsupported) {
    const nodeBin = await buildBinaries('node');
    const { heldBy } = await takeNode(dir, nodeBin);
    node = heldBy ? { skipped: heldBy } : { bin: nodeBin, ports: await freePorts(['kubelet', 'kubeletHealth',
      'containerdMetrics', 'kubeProxyHealth', 'kubeProxyMetrics', 'dnsHealth', 'dnsReady', 'objectStore'] as const) };
  }
  const real = !('skipped' in node);
  const address = real ? nodeNetwork.ip : '127.0.0.1';
  const [ports, pki] = await Promise.all([
    freePorts(['etcdClient', 'etcdPeer', 'apiserver', 'controllerManager', 'scheduler', 'kwok'] as const),
    makePki(join(dir, 'pki'), real ? { name: realNodeName, ip: address } : undefined)]);
  const kubeconfig = join(dir, 'kubeconfig');
  const layout: Layout = { dir, bin, pki, ports, kubeconfig, address,
    ...(values.controllers ? { controllers: values.controllers } : {}) };
  await writeFile(kubeconfig, kubeconfigFor(`https://${address}:${ports.apiserver}`,
    { ca: pki.caCert, cert: pki.adminCert, key: pki.adminKey }), { mode: 0o600 });

  const supervisor = new Supervisor(layout, values['remove-dir'] ?? false, node);
  const shutdown = (code: number) => () => void supervisor.stop().finally(() => process.exit(code));
  process.on('SIGTERM', shutdown(0));
  process.on('SIGINT', shutdown(0));
  process.on('SIGHUP', shutdown(0));
  if (values['watch-stdin']) {
    process.stdin.on('end', shutdown(0));
    process.stdin.on('close', shutdown(0));
    process.stdin.resume();
  }

  try {
    const state = await supervisor.start();
    progress('ready');
    process.stdout.write(`READY ${JSON.stringify(state)}\n`);
  } catch (error) {
    process.stderr.write(`local cluster failed to start: ${(error as Error).message}\n${supervisor.tails()}\n`);
    shutdown(1)();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`local cluster failed to start: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
