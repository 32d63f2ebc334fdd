// Starts one local control plane, reports READY with its state on stdout, and tears it down on SIGTERM/SIGINT,
// or when stdin closes under --watch-stdin (the parent died, however it died).
import { execFile } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseArgs } from 'node:util';
import { GiveUp, waitFor } from '../support/wait.ts';
import { repoRoot } from '../support/paths.ts';
import { freePort } from '../support/ports.ts';
import {
  etcd, kubeApiserver, kubeControllerManager, kubeScheduler, kwok, kwokNodeAnnotation,
  type ComponentSpec, type Layout, type Ports,
} from './components.ts';
import { probe, type ClientTls } from './http.ts';
import { makePki } from './pki.ts';
import { ManagedProcess } from './process.ts';
import { nodeHeartbeatStage } from './stages.ts';
import { nodeNames, stateFile, type ClusterState } from './state.ts';

const run = promisify(execFile);

async function freePorts(): Promise<Ports> {
  const names = ['etcdClient', 'etcdPeer', 'apiserver', 'controllerManager', 'scheduler', 'kwok'] as const;
  const ports = new Set<number>();
  while (ports.size < names.length) ports.add(await freePort());
  const chosen = [...ports];
  return Object.fromEntries(names.map((name, i) => [name, chosen[i]])) as unknown as Ports;
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

function nodeManifest(name: string): object {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      annotations: { [kwokNodeAnnotation]: 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
      labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok' },
    },
  };
}

class Supervisor {
  private readonly processes: ManagedProcess[] = [];
  private stopping: Promise<void> | undefined;

  constructor(private readonly layout: Layout, private readonly removeDir: boolean) {}

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

  private async launch(spec: ComponentSpec): Promise<void> {
    const proc = new ManagedProcess(spec.name, spec.command, spec.args, join(this.layout.dir, 'logs', `${spec.name}.log`));
    this.processes.push(proc);
    proc.start();
    const tls = spec.health.startsWith(`https://127.0.0.1:${this.layout.ports.apiserver}/`) ? this.tls : undefined;
    await waitFor(`${spec.name} to answer ${spec.health}`, async () => {
      if (proc.exitedWith !== undefined) throw new GiveUp(`${spec.name} exited with code ${proc.exitedWith}`);
      return (await probe(spec.health, tls)).status === 200;
    }, { timeoutMs: 90_000, intervalMs: 100 });
  }

  async start(): Promise<ClusterState> {
    const { layout } = this;
    await this.launch(etcd(layout));
    await this.launch(kubeApiserver(layout));

    // kwok reads its stages, logs and exec settings as custom resources; they must exist before it starts.
    await this.kubectl('apply', '--server-side', '-f', join(layout.bin, 'kwok-crds'));
    await this.kubectl('wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all');
    await this.kubectl('apply', '--server-side', '-f', join(layout.bin, 'kwok-stages'));
    await this.kubectl('apply', '--server-side', '-f', '-', { input: JSON.stringify(nodeHeartbeatStage) });
    const nodes = join(layout.dir, 'nodes.json');
    await writeFile(nodes, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: nodeNames.map(nodeManifest) }));
    await this.kubectl('apply', '--server-side', '-f', nodes);

    await Promise.all([kubeControllerManager(layout), kubeScheduler(layout), kwok(layout)].map((spec) => this.launch(spec)));
    await this.kubectl('wait', '--for=condition=Ready', '--timeout=60s', ...nodeNames.map((n) => `node/${n}`));
    // Pods are refused in a namespace until the controller-manager has made its default ServiceAccount.
    await waitFor('the default ServiceAccount', () => this.kubectl('get', 'serviceaccount', 'default', '-n', 'default'),
      { timeoutMs: 60_000 });

    const version = JSON.parse(await this.kubectl('version', '-o', 'json')).serverVersion.gitVersion as string;
    const state: ClusterState = {
      supervisorPid: process.pid,
      dir: layout.dir,
      bin: layout.bin,
      kubeconfig: layout.kubeconfig,
      server: `https://127.0.0.1:${layout.ports.apiserver}`,
      etcd: `http://127.0.0.1:${layout.ports.etcdClient}`,
      ports: layout.ports,
      nodes: [...nodeNames],
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
      if (this.removeDir) await rm(this.layout.dir, { recursive: true, force: true });
      else await rm(stateFile(this.layout.dir), { force: true });
    })();
    return this.stopping;
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { dir: { type: 'string' }, 'remove-dir': { type: 'boolean' }, 'watch-stdin': { type: 'boolean' },
      controllers: { type: 'string' } },
  });
  if (!values.dir) throw new Error('usage: supervisor --dir DIR [--remove-dir] [--watch-stdin] [--controllers LIST]');
  const dir = values.dir;
  await mkdir(join(dir, 'logs'), { recursive: true });
  await mkdir(join(dir, 'pki'), { recursive: true, mode: 0o700 });

  const { stdout: built } = await run('bash', [join(repoRoot, 'test/cluster/build.sh')],
    { timeout: 80 * 60_000, maxBuffer: 1024 * 1024 });
  const bin = built.trim().split('\n').at(-1)!;
  const [ports, pki] = await Promise.all([freePorts(), makePki(join(dir, 'pki'))]);
  const kubeconfig = join(dir, 'kubeconfig');
  const layout: Layout = { dir, bin, pki, ports, kubeconfig, ...(values.controllers ? { controllers: values.controllers } : {}) };
  await writeFile(kubeconfig, kubeconfigFor(`https://127.0.0.1:${ports.apiserver}`,
    { ca: pki.caCert, cert: pki.adminCert, key: pki.adminKey }), { mode: 0o600 });

  const supervisor = new Supervisor(layout, values['remove-dir'] ?? false);
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
