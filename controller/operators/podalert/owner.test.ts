import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cronJobOf, workloadOf } from './owner.ts';

const owned = (kind: string, name: string, apiVersion = kind === 'Job' || kind === 'CronJob' ? 'batch/v1' : 'apps/v1') =>
  [{ apiVersion, kind, name, uid: 'u', controller: true }];
const noJobs = () => undefined;

describe('the workload a pod belongs to', () => {
  it('is the Deployment behind its ReplicaSet, and the controller otherwise', () => {
    assert.deepEqual(workloadOf({ name: 'shop-7d9f8-abcde', labels: { 'pod-template-hash': '7d9f8' },
      ownerReferences: owned('ReplicaSet', 'shop-7d9f8') }, noJobs), { kind: 'Deployment', name: 'shop' });
    // A ReplicaSet of its own: no hash, or one its name does not end with.
    assert.deepEqual(workloadOf({ name: 'rs-x', ownerReferences: owned('ReplicaSet', 'rs') }, noJobs),
      { kind: 'ReplicaSet', name: 'rs' });
    assert.deepEqual(workloadOf({ name: 'rs-x', labels: { 'pod-template-hash': 'zz' }, ownerReferences: owned('ReplicaSet', 'rs') },
      noJobs), { kind: 'ReplicaSet', name: 'rs' });
    assert.deepEqual(workloadOf({ name: 'db-0', ownerReferences: owned('StatefulSet', 'db') }, noJobs),
      { kind: 'StatefulSet', name: 'db' });
    assert.deepEqual(workloadOf({ name: 'bare' }, noJobs), { kind: 'Pod', name: 'bare' });
    // Owned, but not controlled: its own.
    assert.deepEqual(workloadOf({ name: 'p', ownerReferences: [{ ...owned('StatefulSet', 'db')[0]!, controller: false }] },
      noJobs), { kind: 'Pod', name: 'p' });
  });

  it('is the CronJob behind its Job when the Job says so, and the Job otherwise', () => {
    const jobs: Record<string, object> = { 'backup-29000000': { ownerReferences: owned('CronJob', 'backup') }, once: {} };
    const jobOwner = (name: string) => cronJobOf(jobs[name]);
    assert.deepEqual(workloadOf({ name: 'backup-29000000-x', ownerReferences: owned('Job', 'backup-29000000') }, jobOwner),
      { kind: 'CronJob', name: 'backup' });
    assert.deepEqual(workloadOf({ name: 'once-x', ownerReferences: owned('Job', 'once') }, jobOwner), { kind: 'Job', name: 'once' });
    assert.deepEqual(workloadOf({ name: 'gone-x', ownerReferences: owned('Job', 'gone') }, jobOwner), { kind: 'Job', name: 'gone' });
  });
});
