// The local cluster's binaries, built from their Go modules by build.sh (cached outside the checkout, by version and
// recipe): a cold build takes minutes, so test runs build them first, outside any one test's time limit.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { repoRoot } from './paths.ts';

export type BinarySet = 'control-plane' | 'node';

/** Runs build.sh for `set`, its progress passed through to stderr; resolves with the bin directory. */
export function buildBinaries(set: BinarySet): Promise<string> {
  const child = spawn('bash', [join(repoRoot, 'cluster/build.sh'), set], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (chunk) => (out += chunk));
  return new Promise((resolve, reject) => child.on('exit', (code) => (code === 0
    ? resolve(out.trim().split('\n').at(-1)!) : reject(new Error(`cluster/build.sh ${set} exited with ${code}`)))));
}
