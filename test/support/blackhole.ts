// Makes a loopback port a peer that is gone: the kernel drops every packet the port sends, TCP's acknowledgements
// included, as across a partition or to a host that died. The rule lives in a KEELSON- chain, which the real node's
// harness sweeps at start should a test die holding it. Needs root and iptables, as the real node does.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);
const chain = 'KEELSON-TEST-BLACKHOLE';
const jump = ['INPUT', '-i', 'lo', '-j', chain];

export interface Blackhole {
  /** Lets the port's packets through again; safe to call twice. */
  lift(): Promise<void>;
}

export async function blackhole(port: number): Promise<Blackhole> {
  await run('iptables', ['-N', chain]);
  await run('iptables', ['-A', chain, '-p', 'tcp', '--sport', String(port), '-j', 'DROP']);
  await run('iptables', ['-I', ...jump]);
  let lifted = false;
  return {
    async lift() {
      if (lifted) return;
      lifted = true;
      await run('iptables', ['-D', ...jump]);
      await run('iptables', ['-F', chain]);
      await run('iptables', ['-X', chain]);
    },
  };
}
