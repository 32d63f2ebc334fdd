import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { forgetUid, UidsSeen } from './memos.ts';

describe('memos kept by uid', () => {
  it('says which uid is gone: the object deleted, or made again under its name', () => {
    const seen = new UidsSeen();
    assert.equal(seen.now('shop/db', 'u1'), undefined);
    assert.equal(seen.now('shop/db', 'u1'), undefined);
    assert.equal(seen.now('shop/db', 'u2'), 'u1', 'made again');
    assert.equal(seen.now('shop/db', undefined), 'u2', 'deleted');
    assert.equal(seen.now('shop/db', undefined), undefined, 'said once');
    assert.equal(seen.now('shop/other', undefined), undefined, 'never seen');
  });

  it('drops the uid\'s own key and its sub-keys, and nothing of another uid', () => {
    const memo = new Map(['u1', 'u1/backupRequest', 'u10', 'u10/x', 'u2/u1'].map((k) => [k, 1]));
    forgetUid(memo, 'u1');
    assert.deepEqual([...memo.keys()], ['u10', 'u10/x', 'u2/u1']);
  });
});
