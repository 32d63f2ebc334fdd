// Makes a loopback port a peer that is gone: the kernel drops every packet the port sends, TCP's acknowledgements
// included, as across a partition or to a host that died. The rule lives in a KEELSON- chain, which the real node's
// harness sweeps; a chain a killed test left is cleared before a new one is made. Needs root and iptables.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);
/** Waits for the xtables lock rather than failing while kube-proxy holds it. */
const iptables = (args: string[]) => run('iptables', ['-w', '5', ...args]);
const chain = 'KEELSON-TEST-BLACKHOLE';
const jump = ['INPUT', '-i', 'lo', '-j', chain];

export interface Blackhole {
  /** Lets the port's packets through again; safe to call twice. */
  lift(): Promise<void>;
}

/** Why this machine cannot make a blackhole, for node:test's `skip`; false when it can. */
export function blackholeUnsupported(): string | false {
  if (process.getuid?.() !== 0) return 'a blackhole needs root (iptables)';
  if (!['/usr/sbin', '/usr/bin', '/sbin', '/bin'].some((dir) => existsSync(`${dir}/iptables`))) {
    return 'a blackhole needs iptables';
  }
  return false;
}

/** Removes the jump and the chain, if there; fails if the chain is still there after. */
async function clear(): Promise<void> {
  for (const args of [['-D', ...jump], ['-F', chain], ['-X', chain]]) await iptables(args).catch(() => undefined);
  const left = await iptables(['-S', chain]).then(() => true, () => false);
  if (left) throw new Error(`iptables chain ${chain} could not be removed`);
}

export async function blackhole(port: number): Promise<Blackhole> {
  await clear();
  try {
    await iptables(['-N', chain]);
    await iptables(['-A', chain, '-p', 'tcp', '--sport', String(port), '-j', 'DROP']);
    await iptables(['-I', ...jump]);
  } catch (error) {
    await clear();
    throw error;
  }
  let lifted = false;
  return {
    async lift() {
      if (lifted) return;
      lifted = true;
      await clear();
    },
  };
}
