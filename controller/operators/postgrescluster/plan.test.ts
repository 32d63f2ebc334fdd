import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bestCandidate, failoverTimeoutMs, memberName, nextStep, synchronousStandbyNames, type Member, type MemberPod,
  type Observed } from './plan.ts';

const now = new Date('2026-11-21T12:00:00Z');
const pod = (role: MemberPod['role'], extra: Partial<MemberPod> = {}): MemberPod =>
  ({ phase: 'Running', ready: true, role, version: '17.2', deleting: false, ...extra });
const member = (index: number, memberPod?: MemberPod): Member =>
  ({ name: memberName('db', index), index, claim: true, ...(memberPod ? { pod: memberPod } : {}) });
const observed = (members: Member[], extra: Partial<Observed> = {}): Observed => ({
  cluster: 'db', size: 3, nextIndex: members.length, version: '17.2', paused: false, keepVolumeOnScaleDown: true, members, strangers: [], terminating: [],
  primary: members.length ? 'db-0000' : undefined, backupAvailable: false, bootstrapFromBackup: false, now,
  synchronousReplicas: 0, synchronousStandbyNames: '', ...extra });
const healthy = () => [member(0, pod('primary')), member(1, pod('replica')), member(2, pod('replica'))];

describe('the next step of a PostgresCluster', () => {
  it('creates the seed first, waits for it, then grows one member at a time', () => {
    assert.deepEqual(nextStep(observed([])), { kind: 'create-seed', member: 'db-0000', restore: false });
    assert.deepEqual(nextStep(observed([member(0, pod('primary', { phase: 'Pending', ready: false }))])),
      { kind: 'wait', reason: 'member db-0000 is Pending' });
    assert.deepEqual(nextStep(observed([member(0, pod('primary'))])), { kind: 'add-member', member: 'db-0001' });
    assert.deepEqual(nextStep(observed([member(0, pod('primary')), member(1, pod('replica', { ready: false }))])),
      { kind: 'wait', reason: 'member db-0001 is starting' });
    assert.deepEqual(nextStep(observed(healthy())), { kind: 'steady' });
  });

  it('shrinks from the highest-numbered replica, never the primary, keeping its volume unless told', () => {
    const members = healthy();
    assert.deepEqual(nextStep(observed(members, { size: 1 })), { kind: 'remove-member', member: 'db-0002', deleteClaim: false });
    // The role labels win over a stale status: db-0002 was promoted.
    const promoted = [member(0, pod('replica')), member(1, pod('replica')), member(2, pod('primary'))];
    assert.deepEqual(nextStep(observed(promoted, { size: 2, primary: 'db-0000', keepVolumeOnScaleDown: false })),
      { kind: 'remove-member', member: 'db-0001', deleteClaim: true });
  });

  it("removes pods that are no member's before anything else but waiting", () => {
    assert.deepEqual(nextStep(observed(healthy(), { strangers: ['db-0007'] })), { kind: 'remove-stranger', pod: 'db-0007' });
  });

  it('replaces a dead member on its own volume, the primary as primary', () => {
    const failed = [member(0, pod('primary')), member(1, pod('replica', { phase: 'Failed', ready: false })), member(2, pod('replica'))];
    assert.deepEqual(nextStep(observed(failed)), { kind: 'delete-pod', member: 'db-0001', reason: 'its pod is Failed' });
    assert.deepEqual(nextStep(observed([member(0, pod('primary')), member(1), member(2, pod('replica'))])),
      { kind: 'start-member', member: 'db-0001', role: 'replica' });
    assert.deepEqual(nextStep(observed([member(0), member(1, pod('replica')), member(2, pod('replica'))],
      { primaryLostSince: now })), { kind: 'start-member', member: 'db-0000', role: 'primary' });
  });

  it('fails over to a ready replica only after the timeout, fencing the old primary first', () => {
    const unready = [member(0, pod('primary', { ready: false })), member(1, pod('replica')), member(2, pod('replica'))];
    const early = nextStep(observed(unready, { primaryLostSince: new Date(now.getTime() - 10_000) }));
    assert.equal(early.kind, 'wait');
    assert.equal(early.kind === 'wait' && early.requeueAfterMs, failoverTimeoutMs - 10_000);
    const late = { primaryLostSince: new Date(now.getTime() - failoverTimeoutMs) };
    assert.deepEqual(nextStep(observed(unready, late)), { kind: 'delete-pod', member: 'db-0000', reason: 'fenced before failover' });
    const fenced = [member(0, pod('primary', { ready: false, deleting: true })), member(1, pod('replica')),
      member(2, pod('replica', { ready: false }))];
    assert.deepEqual(nextStep(observed(fenced, late)), { kind: 'failover', from: 'db-0000', candidates: ['db-0001'] });
  });

  it('promotes only once the old primary cannot take writes: its pod gone or its Lease expired', () => {
    const late = { primaryLostSince: new Date(now.getTime() - failoverTimeoutMs) };
    const going = [member(0, pod('primary', { ready: false, deleting: true })), member(1, pod('replica')), member(2, pod('replica'))];
    const held = { holder: 'db-0000', expired: false };
    assert.equal(nextStep(observed(going, { ...late, lease: held })).kind, 'wait');
    assert.deepEqual(nextStep(observed(going, { ...late, lease: { ...held, expired: true } })),
      { kind: 'failover', from: 'db-0000', candidates: ['db-0001', 'db-0002'] });
    const gone = [member(0), member(1, pod('replica')), member(2, pod('replica'))];
    assert.equal(nextStep(observed(gone, { ...late, lease: held })).kind, 'failover');
    // A ready primary whose Lease went unrenewed (its agent is cut off) is failed over after the timeout too.
    const cutOff = [member(0, pod('primary')), member(1, pod('replica')), member(2, pod('replica'))];
    const expired = { lease: { ...held, expired: true } };
    assert.equal(nextStep(observed(cutOff, { ...expired, primaryLostSince: now })).kind, 'wait');
    assert.deepEqual(nextStep(observed(cutOff, { ...expired, ...late })),
      { kind: 'delete-pod', member: 'db-0000', reason: 'fenced before failover' });
  });

  it('follows the Lease: a second pod labelled primary is fenced, and a promotion cut short is finished', () => {
    const two = [member(0, pod('primary')), member(1, pod('replica')), member(2, pod('primary'))];
    assert.deepEqual(nextStep(observed(two, { lease: { holder: 'db-0002', expired: false } })),
      { kind: 'fence-primary', member: 'db-0000', holder: 'db-0002' });
    const unfinished = [member(0, pod('replica')), member(1, pod('replica')), member(2, pod('replica'))];
    assert.deepEqual(nextStep(observed(unfinished, { lease: { holder: 'db-0001', expired: false } })),
      { kind: 'finish-promotion', member: 'db-0001' });
  });

  it('waits for a quorum of the replicas that stay, and sets it before shrinking', () => {
    const o = { members: healthy(), size: 3, synchronousReplicas: 1 };
    assert.equal(synchronousStandbyNames(o, 'db-0000'), 'ANY 1 ("db-0001", "db-0002")');
    assert.equal(synchronousStandbyNames({ ...o, size: 2 }, 'db-0000'), 'ANY 1 ("db-0001")');
    assert.equal(synchronousStandbyNames({ ...o, size: 1 }, 'db-0000'), '');
    assert.equal(synchronousStandbyNames({ ...o, synchronousReplicas: 5 }, 'db-0001'), 'ANY 2 ("db-0000", "db-0002")');
    assert.equal(synchronousStandbyNames({ ...o, synchronousReplicas: 0 }, 'db-0000'), '');
    // Never set on this primary (a new one): set, even to nothing, as it may carry its old primary's setting.
    assert.deepEqual(nextStep(observed(healthy(), { size: 1, synchronousReplicas: 1, synchronousStandbyNames: undefined })),
      { kind: 'set-synchronous', member: 'db-0000', value: '' });
    assert.deepEqual(nextStep(observed(healthy(), { size: 1, synchronousReplicas: 1, synchronousStandbyNames: '' })),
      { kind: 'remove-member', member: 'db-0002', deleteClaim: false });
  });

  it('picks the replica that replayed the most WAL', () => {
    assert.equal(bestCandidate([{ member: 'db-0001', lsn: 0x3000000n }, { member: 'db-0002', lsn: 0x1_00000000n }]), 'db-0002');
    assert.equal(bestCandidate([{ member: 'db-0002', lsn: 5n }, { member: 'db-0001', lsn: 5n }]), 'db-0001');
    assert.equal(bestCandidate([]), undefined);
  });

  it('rolls a minor version through the replicas, then switches over, then the old primary', () => {
    const old = (role: MemberPod['role']) => pod(role, { version: '17.1' });
    assert.deepEqual(nextStep(observed([member(0, old('primary')), member(1, old('replica')), member(2, pod('replica'))])),
      { kind: 'upgrade-member', member: 'db-0001' });
    assert.deepEqual(nextStep(observed([member(0, old('primary')), member(1, pod('replica')), member(2, pod('replica'))])),
      { kind: 'switchover', from: 'db-0000', candidates: ['db-0001', 'db-0002'] });
    assert.deepEqual(nextStep(observed([member(0, old('primary'))], { size: 1 })), { kind: 'upgrade-member', member: 'db-0000' });
  });

  it('recovers from the latest backup when every member and its data are gone, and fails without one', () => {
    assert.deepEqual(nextStep(observed([], { primary: 'db-0002', backupAvailable: true })),
      { kind: 'create-seed', member: 'db-0000', restore: true });
    assert.deepEqual(nextStep(observed([], { primary: 'db-0002', backupAvailable: true, terminating: ['pod db-0000'] })),
      { kind: 'wait', reason: 'pod db-0000 still going away' });
    assert.deepEqual(nextStep(observed([], { primary: 'db-0002', strangers: ['db-0000'], terminating: ['claim db-0000'] })),
      { kind: 'remove-stranger', pod: 'db-0000' });
    const failed = nextStep(observed([], { primary: 'db-0002' }));
    assert.equal(failed.kind, 'failed');
    assert.equal(failed.kind === 'failed' && failed.reason, 'NoBackup');
  });

  it('does nothing while paused', () => {
    assert.deepEqual(nextStep(observed([], { paused: true })), { kind: 'paused' });
  });
});
