import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { memberLayout } from './objects.ts';
import { backupServerContainerName, backupSource, standbyOptions } from './standby-backups.ts';

const cluster = { metadata: { name: 'db', namespace: 'shop', uid: 'u1' } } as any;
const spec = (target?: string) => ({ backup: { schedule: '@daily', retain: 2, objectStore: { endpoint: 'https://s3' },
  ...(target ? { target } : {}) } }) as any;
/** A member pod: ready or not, its backup server running or not. */
const member = (name: string, { ready = true, serving = true } = {}) => ({ metadata: { name },
  status: { conditions: [{ type: 'Ready', status: String(ready === true).replace(/^./, (c) => c.toUpperCase()) }],
    initContainerStatuses: serving ? [{ name: backupServerContainerName, state: { running: {} } }] : [] } }) as any;

describe('where a backup into the object store runs', () => {
  it('runs on the first streaming replica, the primary reached through its server', () => {
    const choice = backupSource(spec(), member('db-0000'), [member('db-0002'), member('db-0001')], true);
    assert.equal(choice?.pod.metadata.name, 'db-0001');
    assert.equal(choice?.standbyOf, 'db-0000');
  });

  it('prefers a replica no commit waits for, and never takes the primary for a replica', () => {
    const on = (...args: Parameters<typeof backupSource>) => backupSource(...args)?.pod.metadata.name;
    const replicas = [member('db-0001'), member('db-0002')];
    assert.equal(on(spec(), member('db-0000'), replicas, true, ['db-0001']), 'db-0002');
    assert.equal(on(spec(), member('db-0000'), replicas, true, ['db-0001', 'db-0002']), 'db-0001');
    // Just promoted, its pod still labelled replica.
    assert.equal(on(spec(), member('db-0001'), replicas, true, []), 'db-0002');
  });

  it('runs on the primary when asked to, when no replica streams, or when a server is missing', () => {
    const primary = member('db-0000');
    const on = (...args: Parameters<typeof backupSource>) => backupSource(...args)?.pod.metadata.name;
    assert.equal(on(spec('primary'), primary, [member('db-0001')], true), 'db-0000');
    assert.equal(on(spec(), primary, [member('db-0001', { ready: false })], true), 'db-0000');
    assert.equal(on(spec(), primary, [member('db-0001', { serving: false })], true), 'db-0000',
      'a member made before members ran the server');
    assert.equal(on(spec(), member('db-0000', { serving: false }), [member('db-0001')], true), 'db-0000');
    assert.equal(on(spec(), primary, [member('db-0001')], false), 'db-0000', 'no certificate to reach the primary with');
    assert.equal(backupSource(spec(), undefined, [member('db-0001')], true), undefined);
  });

  it('reaches the primary by its member address, over TLS, verified by the peer CA', () => {
    assert.equal(standbyOptions(cluster, 'db-0000', memberLayout), '--backup-standby ' +
      '--pg2-host=db-0000.db-members.shop.svc --pg2-host-type=tls --pg2-host-port=8432 ' +
      '--pg2-host-ca-file=/keelson-backup-peer/ca.crt --pg2-host-cert-file=/keelson-backup-peer/tls.crt ' +
      '--pg2-host-key-file=/keelson-backup-peer/tls.key --pg2-path=/var/lib/postgresql/data/pgdata --pg2-port=5432 ' +
      '--pg2-socket-path=/var/run/postgresql --pg2-user=postgres');
  });
});
