import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { memberName, type Member, type MemberPod } from './plan.ts';
import { switchoverRequest } from './switchover.ts';

const pod = (role: MemberPod['role'], extra: Partial<MemberPod> = {}): MemberPod =>
  ({ phase: 'Running', ready: true, role, version: '17.2', revision: '', deleting: false, ...extra });
const member = (index: number, memberPod?: MemberPod): Member =>
  ({ name: memberName('db', index), index, claim: true, ...(memberPod ? { pod: memberPod } : {}) });
const members = [member(0, pod('primary')), member(1, pod('replica')), member(2, pod('replica', { ready: false }))];

describe('a switchover asked for with keelson.dev/switchover-to', () => {
  it('goes to a ready replica, and says what it waits for otherwise', () => {
    const asked = switchoverRequest('db-0001', undefined, members, 'db-0000');
    assert.equal(asked.to, 'db-0001');
    assert.match(asked.status!.message, /^switching over from db-0000 to db-0001 once nothing else is to be done/);
    assert.deepEqual(switchoverRequest('db-0002', undefined, members, 'db-0000'),
      { status: { to: 'db-0002', phase: 'Pending', message: 'waiting for db-0002 to be a ready replica' } });
    assert.equal(switchoverRequest('db-0000', undefined, members, 'db-0000').status?.phase, 'Completed');
    // Not to a replica whose node is cordoned: a drain would move the primary off it again.
    assert.deepEqual(switchoverRequest('db-0001', undefined, [members[0]!, member(1, pod('replica', { cordoned: true }))], 'db-0000'),
      { status: { to: 'db-0001', phase: 'Pending', message: 'waiting for the node of db-0001 to be uncordoned' } });
  });

  it('refuses a name that is no member\'s, and asks for nothing without the annotation', () => {
    const refused = switchoverRequest('db-0009', undefined, members, 'db-0000');
    assert.equal(refused.to, undefined);
    assert.match(refused.status!.message, /^no member is named "db-0009": the members are db-0000, db-0001, db-0002$/);
    assert.deepEqual(switchoverRequest(undefined, refused.status, members, 'db-0000'), {});
  });

  it('acts on a request once: answered, it is not taken up again after a failover, until asked anew', () => {
    const done = { to: 'db-0001', phase: 'Completed' as const, message: 'db-0001 promoted in place of db-0000' };
    const afterFailover = [member(0, pod('replica')), member(1, pod('replica')), member(2, pod('primary'))];
    assert.deepEqual(switchoverRequest('db-0001', done, afterFailover, 'db-0002'), { status: done });
    assert.equal(switchoverRequest('db-0000', done, afterFailover, 'db-0002').to, 'db-0000');
  });

  it('never begins again one cut short under way: it ended if the member is primary, else failed', () => {
    const running = { to: 'db-0001', phase: 'Running' as const, message: 'stopping db-0000 to promote db-0001' };
    assert.equal(switchoverRequest('db-0001', running, members, 'db-0001').status?.phase, 'Completed');
    const cut = switchoverRequest('db-0001', running, members, 'db-0000');
    assert.equal(cut.to, undefined);
    assert.equal(cut.status?.phase, 'Failed');
  });
});
