// The TDSet controllers under comparison, each built from its pinned sources and started as its users would run
// it, against the benchmark's cluster with an admin kubeconfig, watching every namespace.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseDockerfile } from '../images/dockerfile.ts';
import { bundleController } from '../images/bundle.ts';
import { repoRoot } from '../cluster/paths.ts';
import { environmentPath, pythonEnvironment } from '../test/support/python.ts';
import { MeasuredProcess } from './process.ts';

const run = promisify(execFile);
const cacheDir = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'keelson', 'bench');
const peers = join(repoRoot, 'bench/peers');

export interface StartOptions {
  kubeconfig: string;
  /** Which operator runs: TDSet unless told (the churn scenario runs PodAlert). */
  operator?: 'tdset' | 'podalert';
  /** Hold every Pod in the controller's cache too (the memory scenario). */
  cachePods: boolean;
  /** Where Keelson writes a V8 CPU profile of each run (`npm run bench -- --profile DIR`). */
  profileDir?: string;
}

export interface Implementation {
  name: string;
  /** Builds or installs it; returns a line naming the versions used. */
  prepare(): Promise<string>;
  start(options: StartOptions): MeasuredProcess;
}

const image = parseDockerfile(readFileSync(join(repoRoot, 'Dockerfile'), 'utf8'));
/** Node's flags in the operator image's ENTRYPOINT, between `node` and the script: the benchmark runs Keelson so. */
const imageNodeFlags = (image.entrypoint ?? []).slice(1, -1);

/** Keelson's peer, compiled, and bundled as the image bundles the controller. */
const keelsonMain = join(repoRoot, 'build/bench/peers/keelson/main.js');
const keelsonBundle = join(repoRoot, 'build/bench/peers/keelson/bundle');

const keelson: Implementation = {
  name: 'keelson',
  async prepare() {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    const bundler = await bundleController([keelsonMain], keelsonBundle);
    return `Keelson ${pkg.version} on Node ${process.versions.node} (${imageNodeFlags.join(' ')}), bundled by ${bundler} ` +
      '(unbundled when profiled)';
  },
  start: ({ kubeconfig, operator = 'tdset', cachePods, profileDir }) => MeasuredProcess.start('keelson', process.execPath, [
    // A profiled run is of the unbundled tree: its frames name the package each function is from (profile.ts).
    ...imageNodeFlags, ...(profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : []),
    profileDir ? keelsonMain : join(keelsonBundle, 'main.js'), `--controllers=${operator}${cachePods ? ',podcache' : ''}`,
    `--kubeconfig=${kubeconfig}`, '--metrics-bind-address=0', '--health-probe-bind-address=0',
  ], image.env ?? {}),
};

const goPeerBinary = join(cacheDir, 'controller-runtime-peer');

const controllerRuntime: Implementation = {
  name: 'controller-runtime',
  async prepare() {
    const dir = join(peers, 'controller-runtime');
    await mkdir(cacheDir, { recursive: true });
    await run('go', ['build', '-mod=readonly', '-o', goPeerBinary, '.'], { cwd: dir, maxBuffer: 16 << 20 });
    const { stdout: go } = await run('go', ['version']);
    const { stdout: module } = await run('go', ['list', '-m', '-f', '{{.Version}}', 'sigs.k8s.io/controller-runtime'], { cwd: dir });
    return `controller-runtime ${module.trim()} (${go.trim().replace(/^go version /, '')})`;
  },
  start: ({ kubeconfig, operator = 'tdset', cachePods }) => MeasuredProcess.start('controller-runtime', goPeerBinary,
    [`--controllers=${operator}`, ...(cachePods ? ['--cache-pods'] : [])], { KUBECONFIG: kubeconfig }),
};

const kopfRequirements = join(peers, 'kopf/requirements.txt');

const kopf: Implementation = {
  name: 'kopf',
  async prepare() {
    const venv = await pythonEnvironment('kopf', kopfRequirements);
    const { stdout } = await run(join(venv, 'bin/python'), ['-c',
      'import importlib.metadata as m, sys; print(f"kopf {m.version(\'kopf\')} (Python {sys.version.split()[0]})")']);
    return stdout.trim();
  },
  start: ({ kubeconfig, cachePods }) => MeasuredProcess.start('kopf', join(environmentPath('kopf', kopfRequirements), 'bin/kopf'),
    ['run', '--standalone', '--all-namespaces', '--quiet', join(peers, 'kopf/tdset.py')],
    { KUBECONFIG: kubeconfig, ...(cachePods ? { KEELSON_BENCH_CACHE_PODS: '1' } : {}) }),
};

export const controllers: readonly Implementation[] = [keelson, controllerRuntime, kopf];
