import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { KubeConfig } from '@kubernetes/client-node';
import { repoRoot } from './paths.ts';
import { GiveUp, waitFor } from './wait.ts';
import { isAlive, readState, type ClusterState } from './state.ts';
import { importImage } from './node/node.ts';
import { buildImage, type ImageRecipe } from '../images/oci.ts';

const supervisorScript = join(repoRoot, 'build/cluster/supervisor.js');

export interface KubectlOptions {
  input?: string;
  kubeconfig?: string;
  /** Resolve with the exit code instead of rejecting when kubectl fails. */
  allowFailure?: boolean;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A local control plane started by the supervisor: either owned by this process or attached to by its folder. */
export class LocalCluster {
  private constructor(readonly state: ClusterState, private readonly owner?: ChildProcess) {}

  /**
   * Starts a cluster tied to this process: it is torn down, and its folder removed, when `stop` is called or
   * when this process exits for any reason. `controllers` narrows kube-controller-manager's --controllers;
   * `realNode` 'off' leaves out the real node (by default there is one where the machine allows).
   */
  static async start({ controllers, realNode = 'auto' }: { controllers?: string; realNode?: 'auto' | 'off' } = {}):
  Promise<LocalCluster> {
    const dir = await mkdtemp(join(tmpdir(), 'keelson-cluster-'));
    const child = spawn(process.execPath, [supervisorScript, '--dir', dir, '--remove-dir', '--watch-stdin',
      `--real-node=${realNode}`, ...(controllers ? ['--controllers', controllers] : [])],
      { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = createInterface({ input: child.stdout! });
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`local cluster supervisor exited with code ${code}`))));
    const ready = new Promise<ClusterState>((resolve) => {
      lines.on('line', (line) => {
        if (line.startsWith('READY ')) resolve(JSON.parse(line.slice('READY '.length)) as ClusterState);
      });
    });
    const state = await Promise.race([ready, exited]);
    child.removeAllListeners('exit');
    return new LocalCluster(state, child);
  }

  /** Starts a cluster in `dir` that outlives this process (`npm run cluster -- up`). */
  static async startDetached(dir: string): Promise<LocalCluster> {
    const log = openSync(join(dir, 'supervisor.log'), 'w');
    const child = spawn(process.execPath, [supervisorScript, '--dir', dir],
      { stdio: ['ignore', log, log], detached: true });
    closeSync(log);
    child.unref();
    let shown = 0;
    const state = await waitFor('the local cluster to become ready', async () => {
      if (child.exitCode !== null) throw new GiveUp(`supervisor exited with code ${child.exitCode}`);
      // Pass the supervisor's progress on: a cold start builds for minutes.
      const lines = (await readFile(join(dir, 'supervisor.log'), 'utf8').catch(() => '')).split('\n');
      for (const line of lines.slice(shown, -1)) process.stderr.write(`${line}\n`);
      shown = Math.max(shown, lines.length - 1);
      return readState(dir);
    }, { timeoutMs: 90 * 60_000, intervalMs: 250 }).catch(async (error: Error) => {
      const tail = (await readFile(join(dir, 'supervisor.log'), 'utf8').catch(() => '')).split('\n').slice(-60);
      throw new Error(`${error.message}\n${tail.join('\n')}`);
    });
    return new LocalCluster(state);
  }

  /** The cluster whose supervisor runs in `dir`, if any. */
  static attach(dir: string): LocalCluster | undefined {
    const state = readState(dir);
    return state && isAlive(state.supervisorPid) ? new LocalCluster(state) : undefined;
  }

  async stop(): Promise<void> {
    const pid = this.state.supervisorPid;
    if (this.owner) {
      const exited = new Promise((resolve) => this.owner!.once('exit', resolve));
      this.owner.kill('SIGTERM');
      await exited;
      return;
    }
    if (!isAlive(pid)) return;
    process.kill(pid, 'SIGTERM');
    await waitFor('the local cluster to stop', () => !isAlive(pid), { timeoutMs: 60_000 });
  }

  /** Builds the image (or takes it from the cache) and loads it into the real node's containerd, as `kind load` does. */
  async loadImage(recipe: ImageRecipe): Promise<string> {
    const { realNode } = this.state;
    if ('skipped' in realNode) throw new Error(`no real node: ${realNode.skipped}`);
    const image = await buildImage(recipe);
    await importImage(realNode.bin, this.state.dir, image.archive);
    return image.reference;
  }

  /**
   * Loads this checkout's operator image into the node, which has the one built when the cluster came up, maybe from
   * older sources (a cluster just started needs none). Undefined without a real node.
   */
  async refreshOperatorImage(): Promise<string | undefined> {
    if ('skipped' in this.state.realNode) return undefined;
    const { controllerImage } = await import('../images/recipes.ts');
    return this.loadImage(await controllerImage());
  }

  get kubectlPath(): string {
    return join(this.state.bin, 'kubectl');
  }

  kubectl(args: string[], { input, kubeconfig = this.state.kubeconfig, allowFailure }: KubectlOptions = {}):
  Promise<KubectlResult> {
    return new Promise((resolve, reject) => {
      const child = execFile(this.kubectlPath, [`--kubeconfig=${kubeconfig}`, ...args],
        { timeout: 120_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
          const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
          if (code !== 0 && !allowFailure) {
            reject(new Error(`kubectl ${args.join(' ')} failed (${code}): ${stderr.trim()}`));
          } else {
            resolve({ code, stdout, stderr });
          }
        });
      // kubectl may exit before reading its input (EPIPE); its exit status says what happened.
      child.stdin!.on('error', () => {});
      child.stdin!.end(input ?? '');
    });
  }

  /** `kubectl get ... -o json` in `namespace`, parsed; undefined when kubectl fails (typically: not found). */
  async getJson(namespace: string, ...args: string[]): Promise<any> {
    const result = await this.kubectl(['get', ...args, '-n', namespace, '-o', 'json'], { allowFailure: true });
    return result.code === 0 ? JSON.parse(result.stdout) : undefined;
  }

  /** Compacts etcd up to its current revision, so watches from any older resourceVersion get 410 Gone. */
  async compactEtcd(): Promise<number> {
    const post = async (path: string, body: object) => {
      const res = await fetch(`${this.state.etcd}${path}`, { method: 'POST', body: JSON.stringify(body) });
      if (!res.ok) throw new Error(`etcd ${path}: ${res.status} ${await res.text()}`);
      return res.json() as Promise<{ header: { revision: string } }>;
    };
    const revision = Number((await post('/v3/kv/range', { key: Buffer.from('/').toString('base64') })).header.revision);
    await post('/v3/kv/compaction', { revision: String(revision), physical: true });
    return revision;
  }

  /** An admin KubeConfig (system:masters) for test set-up and assertions. */
  adminConfig(): KubeConfig {
    const config = new KubeConfig();
    config.loadFromFile(this.state.kubeconfig);
    return config;
  }

  /**
   * Writes a kubeconfig that authenticates as a ServiceAccount with a token minted by the TokenRequest API,
   * exactly as a Pod running under it would, so RBAC applies in full to whatever uses it. `server` reaches the
   * apiserver another way (through a test proxy).
   */
  async serviceAccountKubeconfig(namespace: string, name: string, file: string, server?: string): Promise<string> {
    const token = (await this.kubectl(['create', 'token', name, '-n', namespace, '--duration=2h'])).stdout.trim();
    const config = JSON.parse(await readFile(this.state.kubeconfig, 'utf8'));
    if (server) config.clusters[0].cluster.server = server;
    config.users = [{ name: `${namespace}-${name}`, user: { token } }];
    config.contexts = [{ name: 'keelson-local', context: { cluster: 'keelson-local', user: `${namespace}-${name}`,
      namespace } }];
    await writeFile(file, JSON.stringify(config, null, 2), { mode: 0o600 });
    return file;
  }
}
