// What a real node changes on this machine, owned here: the cluster's bridge and its forwarding rules, the sysctls
// the kubelet sets, its iptables chains, mounts, kubepods cgroups and the fixed paths the kubelet, libcni and
// containerd use. The kubelet's fixed paths allow one real node per machine, so a lock file names its owner; before
// the node is taken, whatever a killed owner left is swept, and a stop sweeps the same way.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync, rmdirSync, statSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { isAlive } from '../state.ts';

const run = promisify(execFile);

export const bridge = 'keelson0';
/** The bridge's network: the node's address (.1) and its pods' addresses. Services are 10.0.0.0/24. */
export const nodeNetwork = { prefix: '10.250.0', bits: 24, ip: '10.250.0.1' };
export const serviceNetwork = '10.0.0.0/24';

const lockDir = '/run/keelson-node';
const recordFile = join(lockDir, 'owner.json');
/** Paths the kubelet, libcni and containerd use whatever they are told; removed on sweep if they were not there. */
const fixedPaths = ['/var/lib/kubelet', '/var/log/containers', '/var/log/pods', '/var/lib/cni', '/run/containerd'];
/** What the kubelet sets (protectKernelDefaults off), and the bridge netfilter switch kube-proxy relies on. */
const watchedSysctls = ['kernel/panic', 'kernel/panic_on_oops', 'vm/overcommit_memory', 'vm/panic_on_oom',
  'kernel/keys/root_maxkeys', 'kernel/keys/root_maxbytes', 'net/bridge/bridge-nf-call-iptables'];
const chainPrefixes = ['KUBE-', 'KEELSON-'];
const forwardChain = 'KEELSON-FORWARD';

/** What the owner of the node found before changing anything, so that any later run can put it back. */
interface HostRecord {
  pid: number;
  dir: string;
  /** The node's binaries: processes running them belong to the node. */
  bin: string;
  sysctls: Record<string, string>;
  absentPaths: string[];
  /** nftables tables there were; iptables-nft leaves the base tables it makes, empty, when its chains are gone. */
  nftTables: string[];
}

async function sh(command: string, args: string[], { allowFailure = false } = {}): Promise<string> {
  try {
    return (await run(command, args, { timeout: 60_000, maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch (error) {
    if (allowFailure) return '';
    throw new Error(`${command} ${args.join(' ')}: ${(error as { stderr?: string }).stderr?.trim() || (error as Error).message}`);
  }
}

function readSysctl(name: string): string | undefined {
  try {
    return readFileSync(join('/proc/sys', name), 'utf8').trim();
  } catch {
    return undefined;
  }
}

async function readRecord(): Promise<HostRecord | undefined> {
  try {
    return JSON.parse(await readFile(recordFile, 'utf8')) as HostRecord;
  } catch {
    return undefined;
  }
}

/** Why this machine cannot run a real node, or undefined if it can. */
export function realNodeUnsupported(): string | undefined {
  if (process.platform !== 'linux') return `a real node needs Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'a real node needs root (it sets up a bridge, mounts and cgroups)';
  for (const tool of ['iptables', 'ip', 'mmdebstrap', 'umoci', 'curl']) {
    if (!['/usr/sbin', '/usr/bin', '/sbin', '/bin'].some((d) => existsSync(join(d, tool)))) {
      return `a real node needs ${tool} (apt-get install ${tool === 'ip' ? 'iproute2' : tool})`;
    }
  }
  return undefined;
}

/**
 * Takes the machine's one real node for the cluster in `dir`: sweeps what a dead owner left, records the state to
 * restore, and makes the bridge. Resolves with why not instead when a live cluster holds it.
 */
export async function takeNode(dir: string, bin: string): Promise<{ heldBy?: string }> {
  await mkdir(lockDir, { recursive: true });
  const previous = await readRecord();
  if (previous && previous.pid !== process.pid && isAlive(previous.pid)) {
    return { heldBy: `the cluster in ${previous.dir} (supervisor pid ${previous.pid}) has this machine's real node` };
  }
  await sweepDeadOwner();
  const record: HostRecord = {
    pid: process.pid, dir, bin,
    sysctls: Object.fromEntries(watchedSysctls.flatMap((n) => (readSysctl(n) === undefined ? [] : [[n, readSysctl(n)!]]))),
    absentPaths: fixedPaths.filter((p) => !existsSync(p)),
    nftTables: await nftTables(),
  };
  await writeFile(recordFile, JSON.stringify(record, null, 2));
  await makeBridge();
  return {};
}

async function makeBridge(): Promise<void> {
  await sh('ip', ['link', 'add', bridge, 'type', 'bridge']);
  await sh('ip', ['addr', 'add', `${nodeNetwork.ip}/${nodeNetwork.bits}`, 'dev', bridge]);
  await sh('ip', ['link', 'set', bridge, 'up']);
  // Forwarding on the bridge alone (pod to Service to pod); the host's ip_forward stays as it was.
  await writeFile(`/proc/sys/net/ipv4/conf/${bridge}/forwarding`, '1');
  await writeFile('/proc/sys/net/bridge/bridge-nf-call-iptables', '1');
  // Nothing crosses between the bridge and any other interface.
  await sh('iptables', ['-N', forwardChain]);
  await sh('iptables', ['-A', forwardChain, '-i', bridge, '!', '-o', bridge, '-j', 'DROP']);
  await sh('iptables', ['-A', forwardChain, '-o', bridge, '!', '-i', bridge, '-j', 'DROP']);
  await sh('iptables', ['-I', 'FORWARD', '1', '-j', forwardChain]);
}

/**
 * Every process running one of the node's binaries and every process in a kubepods cgroup (the containers); with
 * `orphanedDir`, also every process naming that folder in its arguments: the rest of a cluster whose supervisor was
 * killed alone.
 */
function nodeProcesses(bin: string | undefined, orphanedDir?: string): number[] {
  const pids = new Set<number>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if ((bin && readlinkSync(`/proc/${pid}/exe`).startsWith(`${bin}/`)) ||
        (orphanedDir && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(`${orphanedDir}/`))) pids.add(pid);
    } catch { /* gone, or a kernel thread */ }
  }
  for (const cgroup of kubepodsCgroups()) {
    for (const line of readFileSync(join(cgroup, 'cgroup.procs'), 'utf8').split('\n')) if (line) pids.add(Number(line));
  }
  return [...pids];
}

/** The kubepods cgroup trees of every hierarchy, deepest first. */
function kubepodsCgroups(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) walk(join(dir, entry.name));
    found.push(dir);
  };
  for (const hierarchy of readdirSync('/sys/fs/cgroup')) {
    const root = join('/sys/fs/cgroup', hierarchy, 'kubepods');
    try {
      if (statSync(root).isDirectory()) walk(root);
    } catch { /* not in this hierarchy */ }
  }
  return found;
}

function mountsUnder(roots: string[]): string[] {
  const points = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean)
    .map((line) => line.split(' ')[4]!.replace(/\\040/g, ' '));
  return points.filter((p) => roots.some((root) => p === root || p.startsWith(`${root}/`)))
    .sort((a, b) => b.length - a.length);
}

async function killAll(owner: HostRecord | undefined): Promise<void> {
  // A live owner is stopping and has stopped its own processes; a dead one's may all still run.
  const orphanedDir = owner && owner.pid !== process.pid ? owner.dir : undefined;
  for (let round = 0; round < 50; round++) {
    const pids = nodeProcesses(owner?.bin, orphanedDir);
    if (pids.length === 0) return;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch { /* already gone */ }
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`node processes survive SIGKILL: ${nodeProcesses(owner?.bin, orphanedDir).join(', ')}`);
}

async function deleteChains(): Promise<void> {
  for (const tool of ['iptables', 'ip6tables']) {
    for (const table of ['filter', 'nat', 'mangle']) {
      const rules = (await sh(tool, ['-t', table, '-S'], { allowFailure: true })).split('\n');
      const ours = (chain: string) => chainPrefixes.some((p) => chain.startsWith(p));
      // Jumps from the built-in chains first, then our chains' rules, then the chains.
      for (const rule of rules) {
        const [, chain, rest] = /^-A (\S+) (.*)$/.exec(rule) ?? [];
        const target = /-j (\S+)/.exec(rest ?? '')?.[1];
        if (chain && !ours(chain) && target && ours(target)) {
          await sh(tool, ['-t', table, '-D', chain, ...splitRule(rest!)], { allowFailure: true });
        }
      }
      const chains = rules.flatMap((r) => /^-N (\S+)$/.exec(r)?.[1] ?? []).filter(ours);
      for (const chain of chains) await sh(tool, ['-t', table, '-F', chain], { allowFailure: true });
      for (const chain of chains) await sh(tool, ['-t', table, '-X', chain], { allowFailure: true });
    }
  }
}

async function nftTables(): Promise<string[]> {
  return (await sh('nft', ['list', 'tables'], { allowFailure: true })).split('\n').filter((l) => l.startsWith('table '));
}

/** iptables -S output back into arguments, keeping quoted comments whole. */
function splitRule(rule: string): string[] {
  return [...rule.matchAll(/"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2]!);
}

/** Sweeps what a node's owner left if it is dead; a live owner, or none, leaves the machine as it is. */
export async function sweepDeadOwner(): Promise<void> {
  const record = await readRecord();
  if (record && (record.pid === process.pid || !isAlive(record.pid))) await sweepHost();
}

/**
 * Puts the machine back as the node's owner found it: processes and containers killed, mounts, kubepods cgroups,
 * the bridge, iptables chains, sysctls and fixed paths. Safe to run on a machine with nothing to sweep.
 */
export async function sweepHost(): Promise<void> {
  const record = await readRecord();
  await killAll(record);
  const roots = [...(record ? [record.dir] : []), ...fixedPaths];
  for (const point of mountsUnder(roots)) await sh('umount', ['--lazy', point], { allowFailure: true });
  for (let round = 0; round < 50 && kubepodsCgroups().length > 0; round++) {
    for (const cgroup of kubepodsCgroups()) {
      try {
        rmdirSync(cgroup);
      } catch { /* busy for a moment after its last process exits */ }
    }
    if (kubepodsCgroups().length > 0) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  if (existsSync(`/sys/class/net/${bridge}`)) await sh('ip', ['link', 'del', bridge], { allowFailure: true });
  await deleteChains();
  if (record) {
    for (const table of await nftTables()) {
      if (!record.nftTables.includes(table)) await sh('nft', ['delete', ...table.split(' ')], { allowFailure: true });
    }
  }
  for (const [name, value] of Object.entries(record?.sysctls ?? {})) {
    if (readSysctl(name) !== value) await writeFile(join('/proc/sys', name), value).catch(() => undefined);
  }
  for (const path of record?.absentPaths ?? []) await rm(path, { recursive: true, force: true });
  await rm(recordFile, { force: true });
}

/**
 * What of a node is still on this machine (empty when nothing is), for tests and `npm run cluster -- down`: that of
 * the recorded owner, or of the cluster `owner` names once the record is gone.
 */
export async function hostLeftovers(owner?: { bin: string; dir: string }): Promise<string[]> {
  const record = await readRecord();
  const left: string[] = [];
  const { bin, dir } = owner ?? record ?? {};
  const processes = nodeProcesses(bin, dir);
  if (processes.length) left.push(`processes ${processes.join(', ')}`);
  const cgroups = kubepodsCgroups();
  if (cgroups.length) left.push(`cgroups ${cgroups.slice(-3).join(', ')}`);
  const mounts = mountsUnder([...(record ? [record.dir] : []), ...fixedPaths]);
  if (mounts.length) left.push(`mounts ${mounts.slice(0, 3).join(', ')}`);
  if (existsSync(`/sys/class/net/${bridge}`)) left.push(`bridge ${bridge}`);
  for (const tool of ['iptables', 'ip6tables']) {
    for (const table of ['filter', 'nat', 'mangle']) {
      const chains = (await sh(tool, ['-t', table, '-S'], { allowFailure: true })).split('\n')
        .flatMap((r) => /^-N (\S+)$/.exec(r)?.[1] ?? []).filter((c) => chainPrefixes.some((p) => c.startsWith(p)));
      if (chains.length) left.push(`${tool} ${table} chains ${chains.join(', ')}`);
    }
  }
  return left;
}
