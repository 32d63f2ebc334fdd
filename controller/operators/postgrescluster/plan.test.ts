import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bestCandidate, choosePromotion, failoverTimeoutMs, memberName, nextStep, slotName, slotPattern,
  synchronousStandbyNames,
  votersAfter, wantedSlots, wantedSynchronous, type Member, type MemberPod, type Observed } from './plan.ts';

const pod = (role: MemberPod['role'], extra: Partial<MemberPod> = {}): MemberPod =>
  ({ phase: 'Running', ready: true, role, version: '17.2', revision: '', deleting: false, ...extra });
const member = (index: number, memberPod?: MemberPod): Member =>
  ({ name: memberName('db', index), index, claim: true, ...(memberPod ? { pod: memberPod } : {}) });
/** What is observed; the slots recorded, where not given, are those the recorded primary should keep. */
const observed = (members: Member[], extra: Partial<Observed> = {}): Observed => {
  const o: Observed = { cluster: 'db', size: 3, nextIndex: members.length, version: '17.2', revision: '', paused: false,
    keepVolumeOnScaleDown: true, members, strangers: [], terminating: [], primary: members.length ? 'db-0000' : undefined,
    backupAvailable: false, bootstrapFromBackup: false, primaryLostForMs: 0, synchronousReplicas: 0, stuckAfterMs: 300_000,
    synchronous: { primary: 'db-0000', quorum: 0, standbys: [] }, ...extra };
  if (o.synchronous && !o.synchronous.slots) o.synchronous = { ...o.synchronous, slots: wantedSlots(o, o.synchronous.primary) };
  return o;
};
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
    assert.deepEqual(nextStep(observed(promoted, { size: 2, primary: 'db-0000', keepVolumeOnScaleDown: false,
      synchronous: { primary: 'db-0002', quorum: 0, standbys: [] } })),
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
      { primaryLostForMs: 1000 })), { kind: 'start-member', member: 'db-0000', role: 'primary' });
  });

  it('starts the primary first when no member has a pod, as a cluster made again over its kept volumes', () => {
    const kept = [member(0), member(1), member(2)];
    const lease = { holder: 'db-0002', expired: false };
    assert.deepEqual(nextStep(observed(kept, { lease })), { kind: 'start-member', member: 'db-0002', role: 'primary' });
    // A Lease released from it, nobody promoted since: still the primary, which takes the Lease back as it starts.
    assert.deepEqual(nextStep(observed(kept, { lease: { holder: 'db-0002.released', expired: true }, primary: undefined })),
      { kind: 'start-member', member: 'db-0002', role: 'primary' });
  });

  it('fails over to a ready replica only after the timeout, fencing the old primary first', () => {
    const unready = [member(0, pod('primary', { ready: false })), member(1, pod('replica')), member(2, pod('replica'))];
    const early = nextStep(observed(unready, { primaryLostForMs: 10_000 }));
    assert.equal(early.kind, 'wait');
    assert.equal(early.kind === 'wait' && early.requeueAfterMs, failoverTimeoutMs - 10_000);
    const late = { primaryLostForMs: failoverTimeoutMs };
    assert.deepEqual(nextStep(observed(unready, late)), { kind: 'delete-pod', member: 'db-0000', reason: 'fenced before failover' });
    // A replica that runs but is not ready may hold the last commits: it is asked too.
    const fenced = [member(0, pod('primary', { ready: false, deleting: true })), member(1, pod('replica')),
      member(2, pod('replica', { ready: false })), member(3, pod('replica', { phase: 'Pending', ready: false }))];
    assert.deepEqual(nextStep(observed(fenced, late)), { kind: 'failover', from: 'db-0000', candidates: ['db-0001', 'db-0002'] });
  });

  it('promotes only once the old primary cannot take writes: its pod gone or its Lease expired', () => {
    const late = { primaryLostForMs: failoverTimeoutMs };
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
    assert.equal(nextStep(observed(cutOff, { ...expired, primaryLostForMs: 1 })).kind, 'wait');
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

  it('names the staying replicas that stream as synchronous standbys, and only grows the set while a primary lives', () => {
    const o = { members: healthy(), size: 3, synchronousReplicas: 1 };
    assert.deepEqual(wantedSynchronous(o, 'db-0000'), { primary: 'db-0000', quorum: 1, standbys: ['db-0001', 'db-0002'] });
    assert.deepEqual(wantedSynchronous({ ...o, size: 2 }, 'db-0000').standbys, ['db-0001']);
    assert.deepEqual(wantedSynchronous({ ...o, size: 1 }, 'db-0000'), { primary: 'db-0000', quorum: 0, standbys: [] });
    assert.deepEqual(wantedSynchronous({ ...o, synchronousReplicas: 5 }, 'db-0001'),
      { primary: 'db-0001', quorum: 2, standbys: ['db-0000', 'db-0002'] });
    assert.equal(synchronousStandbyNames({ quorum: 1, standbys: ['db-0001', 'db-0002'] }), 'ANY 1 ("db-0001", "db-0002")');
    assert.equal(synchronousStandbyNames({ quorum: 0, standbys: [] }), '');
    // Promoted from the replicas that answered: a member Pending on a dead node is not waited for...
    const pending = [member(0, pod('replica', { phase: 'Pending', ready: false })), member(1, pod('primary')),
      member(2, pod('replica'))];
    assert.deepEqual(wantedSynchronous({ ...o, members: pending }, 'db-0001', ['db-0002']).standbys, ['db-0002']);
    // ...and with nobody that answered or streams, every staying replica is named: commits wait rather than go
    // unconfirmed.
    const none = [member(0, pod('replica', { phase: 'Pending', ready: false })), member(1, pod('primary')), member(2)];
    assert.deepEqual(wantedSynchronous({ ...o, members: none }, 'db-0001', []).standbys, ['db-0000', 'db-0002']);
    // A replica that starts streaming is added; one that stops is kept (it may hold commits nobody else has).
    const recorded = { primary: 'db-0001', quorum: 1, standbys: ['db-0002'] };
    const back = [member(0, pod('replica')), member(1, pod('primary')), member(2, pod('replica', { ready: false }))];
    assert.deepEqual(wantedSynchronous({ ...o, members: back, synchronous: recorded }, 'db-0001').standbys, ['db-0000', 'db-0002']);
    // A member whose volume is being deleted leaves the set.
    const leaving = [member(0, pod('primary')), member(1, pod('replica')), { ...member(2, pod('replica')), claimDeleting: true }];
    assert.deepEqual(wantedSynchronous({ ...o, members: leaving }, 'db-0000').standbys, ['db-0001']);
  });

  it('sets the synchronous standbys before waiting on a member, recording what a shrink drops', () => {
    const busy = [member(0, pod('primary')), member(1, pod('replica')), member(2, pod('replica', { phase: 'Pending', ready: false }))];
    assert.deepEqual(nextStep(observed(busy, { synchronousReplicas: 1, synchronous: undefined })), { kind: 'set-synchronous',
      member: 'db-0000', synchronous: { primary: 'db-0000', quorum: 1, standbys: ['db-0001', 'db-0002'],
        slots: ['db_0001', 'db_0002'] }, dropped: [] });
    // Recorded for another primary (the old one): set on this one.
    const other = { primary: 'db-0002', quorum: 1, standbys: ['db-0000', 'db-0001'] };
    assert.equal(nextStep(observed(healthy(), { synchronousReplicas: 1, synchronous: other })).kind, 'set-synchronous');
    const inForce = { primary: 'db-0000', quorum: 1, standbys: ['db-0001', 'db-0002'] };
    assert.deepEqual(nextStep(observed(healthy(), { size: 2, synchronousReplicas: 1, synchronous: inForce })), { kind: 'set-synchronous',
      member: 'db-0000', synchronous: { primary: 'db-0000', quorum: 1, standbys: ['db-0001'], slots: ['db_0001', 'db_0002'] },
      dropped: ['db-0002'] });
    assert.deepEqual(nextStep(observed(healthy(), { size: 2, synchronousReplicas: 1,
      synchronous: { ...inForce, standbys: ['db-0001'] } })), { kind: 'remove-member', member: 'db-0002', deleteClaim: false });
  });

  it('keeps a replication slot for every other member: a new one\'s made, a removed one\'s dropped', () => {
    assert.equal(slotName('orders-0001'), 'orders_0001');
    assert.equal(slotPattern('orders-eu'), '^orders_eu_[0-9]{4,}$');
    assert.equal(slotName(`${'a'.repeat(63)}-0001`).length, 63);
    const inForce = { primary: 'db-0000', quorum: 0, standbys: [] };
    const grown = [...healthy(), member(3, pod('replica', { phase: 'Pending', ready: false }))];
    assert.deepEqual(nextStep(observed(grown, { size: 4, synchronous: { ...inForce, slots: ['db_0001', 'db_0002'] } })),
      { kind: 'set-synchronous', member: 'db-0000', dropped: [],
        synchronous: { ...inForce, slots: ['db_0001', 'db_0002', 'db_0003'] } });
    // A slot still in use when it was to be dropped stays recorded: it is tried again.
    assert.equal(nextStep(observed(healthy(), { synchronous: { ...inForce, slots: ['db_0001', 'db_0002', 'db_0003'] } })).kind,
      'set-synchronous');
    assert.deepEqual(nextStep(observed(healthy(), { synchronous: { ...inForce, slots: ['db_0001', 'db_0002'] } })), { kind: 'steady' });
  });

  it('waits for a busy member only so long: a replica Pending past it is replaced, the rest no longer waited for', () => {
    const pendingFor = (ms: number) => [member(0, pod('primary')), member(1, pod('replica')),
      member(2, pod('replica', { phase: 'Pending', ready: false, busyForMs: ms, unschedulable: true }))];
    assert.deepEqual(nextStep(observed(pendingFor(299_000))), { kind: 'wait', reason: 'member db-0002 is Pending' });
    assert.deepEqual(nextStep(observed(pendingFor(301_000))), { kind: 'replace-member', member: 'db-0002',
      deleteClaim: false, reason: 'Pending for 301s' });
    // Not twice within twice the bound, and not a pod that was scheduled (waiting for its image, say).
    assert.equal(nextStep(observed(pendingFor(301_000), { lastReplacedMsAgo: 500_000 })).kind, 'wait');
    const pulling = pendingFor(301_000);
    pulling[2]!.pod!.unschedulable = false;
    assert.equal(nextStep(observed(pulling)).kind, 'wait');
    // A member that never finishes going away holds nothing up, and is said to be stuck.
    const going = [member(0, pod('primary')), member(1, pod('replica')),
      member(2, pod('replica', { deleting: true, busyForMs: 400_000 }))];
    assert.deepEqual(nextStep(observed(going, { size: 4 })), { kind: 'add-member', member: 'db-0003' });
    assert.deepEqual(nextStep(observed(going)), { kind: 'wait', reason: 'member db-0002 has been going away for 400s; ' +
      'nothing waits for it', requeueAfterMs: 30_000 });
  });

  it('fails over, while the old primary\'s pod is still there, only to a member it counts on in failsafe', () => {
    const unrenewed = [member(0, pod('primary', { ready: false, deleting: true })), member(1, pod('replica')),
      member(2, pod('replica'))];
    const lease = (failsafePeers?: string[]) => ({ holder: 'db-0000', expired: true, ...(failsafePeers ? { failsafePeers } : {}) });
    const lost = { primaryLostForMs: failoverTimeoutMs };
    // The Lease is taken from it first, so that it stops before anyone is asked how far its WAL goes.
    assert.deepEqual(nextStep(observed(unrenewed, { ...lost, lease: lease(['db-0002']) })),
      { kind: 'release-lease', from: 'db-0000' });
    const released = { holder: 'db-0000.released', expired: true, failsafePeers: ['db-0002'] };
    assert.deepEqual(nextStep(observed(unrenewed, { ...lost, lease: released })),
      { kind: 'failover', from: 'db-0000', candidates: ['db-0002'] });
    assert.equal(nextStep(observed(unrenewed, { ...lost, lease: { ...released, expired: false } })).kind, 'wait');
    assert.match((nextStep(observed(unrenewed, { ...lost, lease: lease([]) })) as { reason: string }).reason,
      /may still take writes in failsafe, and none of db-0001, db-0002 is a member it counts on/);
    // Its pod gone, its agent went with it.
    assert.deepEqual(nextStep(observed([member(0), ...unrenewed.slice(1)], { ...lost, lease: lease([]) })),
      { kind: 'failover', from: 'db-0000', candidates: ['db-0001', 'db-0002'] });
    // An agent that counts on nobody (no addresses in the Lease) does no failsafe: expired, it stopped.
    assert.deepEqual(nextStep(observed(unrenewed, { ...lost, lease: lease() })).kind, 'failover');
  });

  it('promotes only when enough synchronous standbys answered to hold every acknowledged commit', () => {
    const voters = { quorum: 1, standbys: ['db-0001', 'db-0002'] };
    // ANY 1 of 2: a commit may be on either alone, so both must answer; the one with more flushed WAL wins.
    assert.deepEqual(choosePromotion([{ member: 'db-0001', lsn: 9n }, { member: 'db-0002', lsn: 5n }], voters, []),
      { chosen: 'db-0001' });
    const one = choosePromotion([{ member: 'db-0002', lsn: 5n }], voters, []);
    assert.ok('waiting' in one && /1 of the synchronous standbys answered, and 2 must .*waiting for db-0001/.test(one.waiting));
    // A standby whose volume is gone can tell nothing: it is not waited for.
    assert.deepEqual(choosePromotion([{ member: 'db-0002', lsn: 5n }], voters, ['db-0001']), { chosen: 'db-0002' });
    // ANY 1 of 3: three must answer; ANY 2 of 3: two.
    const three = ['db-0001', 'db-0002', 'db-0003'];
    const two = [{ member: 'db-0001', lsn: 1n }, { member: 'db-0003', lsn: 2n }];
    assert.ok('waiting' in choosePromotion(two, { quorum: 1, standbys: three }, []));
    assert.deepEqual(choosePromotion(two, { quorum: 2, standbys: three }, []), { chosen: 'db-0003' });
    // Asynchronous: whoever answers.
    assert.deepEqual(choosePromotion(two, { quorum: 0, standbys: [] }, []), { chosen: 'db-0003' });
    assert.deepEqual(choosePromotion([], { quorum: 0, standbys: [] }, []), { waiting: 'no candidate answered' });
  });

  it('asks, after a primary whose standbys were never recorded, every other member', () => {
    const o = { members: healthy(), synchronousReplicas: 1 };
    assert.deepEqual(votersAfter({ ...o, synchronous: { primary: 'db-0000', quorum: 1, standbys: ['db-0002'] } }, 'db-0000'),
      { primary: 'db-0000', quorum: 1, standbys: ['db-0002'] });
    assert.deepEqual(votersAfter({ ...o, synchronous: { primary: 'db-0001', quorum: 1, standbys: ['db-0000'] } }, 'db-0000'),
      { quorum: 1, standbys: ['db-0001', 'db-0002'] });
  });

  it('moves members off volumes being deleted: the primary by a switchover, never as a stranger', () => {
    const primaryLeaving = [{ ...member(0, pod('primary')), claimDeleting: true }, member(1, pod('replica')), member(2, pod('replica'))];
    assert.deepEqual(nextStep(observed(primaryLeaving, { synchronous: { primary: 'db-0000', quorum: 0, standbys: [] } })),
      { kind: 'switchover', from: 'db-0000', candidates: ['db-0001', 'db-0002'] });
    const replicaLeaving = [member(0, pod('primary')), member(1, pod('replica')), { ...member(2, pod('replica')), claimDeleting: true }];
    assert.deepEqual(nextStep(observed(replicaLeaving)), { kind: 'delete-pod', member: 'db-0002', reason: 'its volume is being deleted' });
    // Once its pod is gone, no pod is started on it, and a new member takes its place.
    const gone = [member(0, pod('primary')), member(1, pod('replica')), { ...member(2), claimDeleting: true }];
    assert.deepEqual(nextStep(observed(gone, { nextIndex: 3 })), { kind: 'add-member', member: 'db-0003' });
  });

  it('switches a primary on a cordoned node over to a ready replica on another node, before a drain evicts it', () => {
    const drained = [member(0, pod('primary', { cordoned: true })), member(1, pod('replica', { cordoned: true })),
      member(2, pod('replica'))];
    // Both replicas answer how far their WAL goes; the one that stays up is named.
    assert.deepEqual(nextStep(observed(drained)),
      { kind: 'switchover', from: 'db-0000', candidates: ['db-0001', 'db-0002'], to: 'db-0002', drain: true });
    // Enough synchronous standbys must be ready to answer first, as for any switchover: both of ANY 1 of two.
    const synchronous = { primary: 'db-0000', quorum: 1, standbys: ['db-0001', 'db-0002'] };
    const standbyStarting = [drained[0]!, member(1, pod('replica', { cordoned: true, ready: false, busyForMs: 400_000 })),
      drained[2]!];
    const waiting = nextStep(observed(standbyStarting, { synchronousReplicas: 1, synchronous }));
    assert.equal(waiting.kind === 'wait' && waiting.reason.startsWith('switchover from db-0000 waits: 1 of the synchronous'),
      true, JSON.stringify(waiting));
    // The replica a switchover was asked to, when its node stays.
    assert.deepEqual(nextStep(observed([drained[0]!, member(1, pod('replica')), drained[2]!], { switchoverTo: 'db-0002' })),
      { kind: 'switchover', from: 'db-0000', candidates: ['db-0001', 'db-0002'], to: 'db-0002', drain: true });
    // Every replica on a cordoned node too: nothing to switch over to yet; the rest goes on (the drain evicts the
    // replicas, which come back on other nodes).
    const allCordoned = [drained[0]!, drained[1]!, member(2, pod('replica', { cordoned: true }))];
    assert.deepEqual(nextStep(observed(allCordoned)), { kind: 'steady' });
    assert.deepEqual(nextStep(observed(allCordoned.slice(0, 2))), { kind: 'add-member', member: 'db-0002' });
    // A replica's node cordoned moves no primary.
    const replicaCordoned = [member(0, pod('primary')), drained[1]!, drained[2]!];
    assert.deepEqual(nextStep(observed(replicaCordoned)), { kind: 'steady' });
  });

  it('fails over at once when the primary\'s member is gone, volume and all, once no pod of its name is left', () => {
    const replicas = [member(1, pod('replica')), member(2, pod('replica', { ready: false }))];
    const lease = { holder: 'db-0000', expired: true };
    // Its Lease still renewed: its agent, and so perhaps its PostgreSQL, still runs somewhere.
    assert.equal(nextStep(observed(replicas, { lease: { ...lease, expired: false } })).kind, 'wait');
    const voters = { synchronous: { primary: 'db-0000', quorum: 1, standbys: ['db-0001', 'db-0002'] } };
    assert.deepEqual(nextStep(observed(replicas, { lease, ...voters })),
      { kind: 'failover', from: 'db-0000', candidates: ['db-0001', 'db-0002'] });
    assert.deepEqual(nextStep(observed(replicas, { lease, strangers: ['db-0000'] })),
      { kind: 'remove-stranger', pod: 'db-0000' });
    assert.equal(nextStep(observed(replicas, { lease, terminating: ['pod db-0000'] })).kind, 'wait');
    // A replica with no pod starts, to be a candidate, rather than wait for a primary that cannot come back, or that
    // stopped on a volume that came back empty; not for a primary that is only slow to start.
    assert.deepEqual(nextStep(observed([member(1)], { lease })), { kind: 'start-member', member: 'db-0001', role: 'replica' });
    const slow = [member(0, pod('primary', { ready: false })), member(1)];
    assert.equal(nextStep(observed(slow, { primaryLostForMs: failoverTimeoutMs })).kind, 'wait');
    const emptied = [member(0, pod('primary', { ready: false, noData: true })), member(1)];
    assert.deepEqual(nextStep(observed(emptied, { primaryLostForMs: 1000 })),
      { kind: 'start-member', member: 'db-0001', role: 'replica' });
  });

  it('switches over only to replicas enough to promote one: the primary stays while one needed is not ready', () => {
    const lagging = [{ ...member(0, pod('primary')), claimDeleting: true }, member(1, pod('replica')),
      member(2, pod('replica', { ready: false, busyForMs: 600_000 }))];
    const voters = { synchronousReplicas: 1, synchronous: { primary: 'db-0000', quorum: 1, standbys: ['db-0001', 'db-0002'] } };
    const step = nextStep(observed(lagging, voters));
    assert.equal(step.kind, 'wait');
    assert.match(step.kind === 'wait' ? step.reason : '', /switchover from db-0000 waits: 1 of the synchronous standbys answered, and 2 must/);
    const both = [lagging[0]!, member(1, pod('replica')), member(2, pod('replica'))];
    assert.deepEqual(nextStep(observed(both, voters)), { kind: 'switchover', from: 'db-0000', candidates: ['db-0001', 'db-0002'] });
  });

  it('switches over when asked, once nothing else is to be done, every ready replica asked how far it goes', () => {
    assert.deepEqual(nextStep(observed(healthy(), { switchoverTo: 'db-0002' })),
      { kind: 'switchover', from: 'db-0000', candidates: ['db-0001', 'db-0002'], to: 'db-0002', asked: true });
    assert.deepEqual(nextStep(observed(healthy(), { switchoverTo: 'db-0002', size: 2 })),
      { kind: 'remove-member', member: 'db-0002', deleteClaim: false });
    assert.deepEqual(nextStep(observed(healthy(), { switchoverTo: 'db-0000' })), { kind: 'steady' });
  });

  it('picks the candidate whose WAL goes furthest', () => {
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
    // Not onto a cordoned node, where a drain would move the primary again, when another will do.
    assert.deepEqual(nextStep(observed([member(0, old('primary')), member(1, pod('replica', { cordoned: true })),
      member(2, pod('replica'))])), { kind: 'switchover', from: 'db-0000', candidates: ['db-0001', 'db-0002'], to: 'db-0002' });
  });

  it('restarts members with parameters pending a restart the same way: replicas, a switchover, the old primary', () => {
    const pending = (role: MemberPod['role']) => pod(role, { restartPending: 'shared_buffers' });
    assert.deepEqual(nextStep(observed([member(0, pending('primary')), member(1, pod('replica')), member(2, pending('replica'))])),
      { kind: 'upgrade-member', member: 'db-0002' });
    assert.deepEqual(nextStep(observed([member(0, pending('primary')), member(1, pod('replica')), member(2, pod('replica'))])),
      { kind: 'switchover', from: 'db-0000', candidates: ['db-0001', 'db-0002'] });
    assert.deepEqual(nextStep(observed(healthy())), { kind: 'steady' });
  });

  it('brings a cluster made before TLS to verify-full in two rolls, and never loops on a replica it just made', () => {
    const made = (role: MemberPod['role'], tls: string) => pod(role, { tls });
    // The primary serves no TLS: replicas are made to stream with prefer, and are then up to date.
    const before = { tls: 'prefer' };
    assert.deepEqual(nextStep(observed([member(0, made('primary', '')), member(1, made('replica', '')),
      member(2, made('replica', 'prefer'))], before)), { kind: 'upgrade-member', member: 'db-0001' });
    assert.deepEqual(nextStep(observed([member(0, made('primary', '')), member(1, made('replica', 'prefer')),
      member(2, made('replica', 'prefer'))], before)),
    { kind: 'switchover', from: 'db-0000', candidates: ['db-0001', 'db-0002'] });
    // Once a member that serves TLS is the primary, what streams with prefer is rolled again.
    assert.deepEqual(nextStep(observed([member(0, made('replica', 'verify-full')), member(1, made('primary', 'prefer')),
      member(2, made('replica', 'prefer'))], { tls: 'verify-full', primary: 'db-0001',
      synchronous: { primary: 'db-0001', quorum: 0, standbys: [] } })), { kind: 'upgrade-member', member: 'db-0002' });
    const done = [member(0, made('primary', 'verify-full')), member(1, made('replica', 'verify-full'))];
    assert.deepEqual(nextStep(observed(done, { size: 2, tls: 'verify-full' })), { kind: 'steady' });
    assert.deepEqual(nextStep(observed([member(0, made('primary', ''))], { size: 1, tls: 'prefer' })), { kind: 'steady' },
      'a lone member is not restarted for TLS');
  });

  it('stops a roll at a member it restarted that does not get ready, and never restarts the primary under writes', () => {
    const pending = (role: MemberPod['role']) => pod(role, { restartPending: 'shared_buffers' });
    const failing = pod('replica', { ready: false, busyForMs: 10 * 60_000 });
    const stopped = nextStep(observed([member(0, pending('primary')), member(1, failing), member(2, pending('replica'))]));
    assert.equal(stopped.kind, 'wait');
    assert.match((stopped as { reason: string }).reason, /^member db-0001 is not ready since it was restarted/);
    const noReplica = nextStep(observed([member(0, pending('primary')), member(1, failing)], { size: 2 }));
    assert.equal(noReplica.kind, 'wait', 'the primary is not restarted with no replica to take over');
    assert.deepEqual(nextStep(observed([member(0, pending('primary'))], { size: 1 })), { kind: 'steady' },
      'a lone member is not restarted for a parameter');
  });

  it('restarts members made from other archive settings the same way, one at a time', () => {
    const archiving = { revision: 'a1' };
    assert.deepEqual(nextStep(observed(healthy(), archiving)), { kind: 'upgrade-member', member: 'db-0001' });
    const replicasDone = [member(0, pod('primary')), member(1, pod('replica', archiving)), member(2, pod('replica', archiving))];
    assert.deepEqual(nextStep(observed(replicasDone, archiving)),
      { kind: 'switchover', from: 'db-0000', candidates: ['db-0001', 'db-0002'] });
    assert.deepEqual(nextStep(observed(healthy().map((m) => ({ ...m, pod: { ...m.pod!, ...archiving } })), archiving)),
      { kind: 'steady' });
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
