import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Ports } from './components.ts';
import type { ObjectStore } from './node/objectstore.ts';

/** What a running local cluster's supervisor writes to `<dir>/state.json` once everything is ready. */
export interface ClusterState {
  supervisorPid: number;
  dir: string;
  bin: string;
  kubeconfig: string;
  server: string;
  etcd: string;
  ports: Ports;
  /** The kwok nodes. */
  nodes: string[];
  /** The real node, or why this cluster has none. */
  realNode: { name: string; bin: string; containerdSocket: string; objectStore: ObjectStore } | { skipped: string };
  version: string;
  pids: Record<string, number>;
  logs: Record<string, string>;
}

export const nodeNames = ['kwok-node-0', 'kwok-node-1'] as const;

export function stateFile(dir: string): string {
  return join(dir, 'state.json');
}

export function readState(dir: string): ClusterState | undefined {
  try {
    return JSON.parse(readFileSync(stateFile(dir), 'utf8')) as ClusterState;
  } catch {
    return undefined;
  }
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
