import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { claimsToGrow, storageCondition, type Claim } from './storage.ts';

const claim = (name: string, requested: string, capacity?: string, fileSystemPending = false): Claim => ({
  apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name },
  spec: { resources: { requests: { storage: requested } }, storageClassName: 'fast' },
  status: { ...(capacity ? { capacity: { storage: capacity } } : {}),
    ...(fileSystemPending ? { conditions: [{ type: 'FileSystemResizePending', status: 'True' }] } : {}) },
});

describe('growing member volumes', () => {
  it('asks only the bound claims asking for less than the size for it, never one for less', () => {
    const claims = [claim('a', '1Gi', '1Gi'), claim('b', '2Gi', '2Gi'), claim('c', '3Gi', '3Gi'), claim('new', '1Gi')];
    assert.deepEqual(claimsToGrow(claims, '2Gi').map((c) => c.metadata.name), ['a']);
    assert.deepEqual(claimsToGrow(claims, 2 * 1024 ** 3).map((c) => c.metadata.name), ['a']);
  });

  it('says what the provider has still to do, the refusal in the apiserver\'s words, or that it is done', () => {
    const refusal = 'only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize';
    const refused = storageCondition([claim('a', '1Gi', '1Gi'), claim('b', '1Gi', '1Gi')], '2Gi',
      new Map([['a', refusal], ['b', refusal]]), 4);
    assert.deepEqual(refused, { type: 'StorageResized', observedGeneration: 4, status: 'False', reason: 'ExpansionRefused',
      message: `a, b cannot grow to 2Gi: ${refusal} (StorageClass fast); they keep their size, and new members get 2Gi` });
    const quota = storageCondition([claim('a', '1Gi', '1Gi')], '2Gi', new Map([['a', 'exceeded quota: storage']]));
    assert.deepEqual([quota.reason, quota.message], ['ResizeRefused',
      'a cannot grow to 2Gi: exceeded quota: storage; they keep their size, and new members get 2Gi']);
    const resizing = storageCondition([claim('a', '2Gi', '1Gi', true), claim('b', '2Gi', '2Gi'), claim('c', '2Gi')], '2Gi',
      new Map());
    assert.equal(resizing.reason, 'Resizing');
    assert.equal(resizing.message, '1 of 3 member volumes below 2Gi yet (a 1Gi): waiting for the storage provider; ' +
      'the claims\' conditions say how it goes');
    const done = storageCondition([claim('a', '2Gi', '2Gi'), claim('b', '2Gi', '10Gi'), claim('new', '2Gi')], '2Gi', new Map());
    assert.deepEqual([done.status, done.reason], ['True', 'Resized']);
  });
});
