import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { archivingCondition, parseArchiverStats } from './archiving.ts';
import { archiveRevision, endpointOf, objectStoreEnv, pgBackRestEnv, pgBackRestTime, repositoryPath } from './archive.ts';

const cluster = { metadata: { name: 'db', namespace: 'shop' } };
const store = { endpoint: 'https://objectstore.keelson-local.svc.cluster.local:8443', bucket: 'keelson', region: 'us-east-1',
  credentials: { name: 'store-keys' }, ca: { name: 'kube-root-ca.crt', key: 'ca.crt' } };

describe('archiving with pgBackRest', () => {
  it('configures members through the environment, the keys by reference to the user\'s Secret only', () => {
    const env = pgBackRestEnv(cluster, objectStoreEnv(cluster, store), { pgdata: '/data', socketDir: '/run', port: 5432 }) as
      { name: string; value?: string; valueFrom?: { secretKeyRef: { name: string; key: string } } }[];
    const value = (name: string) => env.find((e) => e.name === name)?.value;
    assert.equal(value('PGBACKREST_STANZA'), 'db');
    assert.equal(value('PGBACKREST_REPO1_PATH'), '/shop/db');
    assert.equal(value('PGBACKREST_REPO1_S3_ENDPOINT'), 'objectstore.keelson-local.svc.cluster.local');
    assert.equal(value('PGBACKREST_REPO1_STORAGE_PORT'), '8443');
    assert.equal(value('PGBACKREST_REPO1_STORAGE_CA_FILE'), '/etc/keelson/objectstore-ca/ca.crt');
    const keys = env.filter((e) => e.valueFrom);
    assert.deepEqual(keys.map((e) => [e.name, e.valueFrom!.secretKeyRef.name, e.valueFrom!.secretKeyRef.key]), [
      ['PGBACKREST_REPO1_S3_KEY', 'store-keys', 'AWS_ACCESS_KEY_ID'],
      ['PGBACKREST_REPO1_S3_KEY_SECRET', 'store-keys', 'AWS_SECRET_ACCESS_KEY']]);
    assert.deepEqual(endpointOf({ ...store, endpoint: 'https://s3.example' }), { host: 's3.example' });
    assert.equal(repositoryPath(cluster, { ...store, path: '/archive/db' }), '/archive/db');
  });

  it('writes a recovery target time as pgBackRest reads it', () => {
    assert.equal(pgBackRestTime('2026-11-26T02:00:00.123456Z'), '2026-11-26 02:00:00.123456+00');
    assert.equal(pgBackRestTime('2026-11-26t03:00:00+01:00'), '2026-11-26 03:00:00+01:00');
    assert.equal(pgBackRestTime('2026-11-26T02:00:00.123456789Z'), '2026-11-26 02:00:00.123456+00');
  });

  it('changes the members\' revision only with the archive settings', () => {
    const spec = (backup?: object) => ({ version: '15', backup }) as never;
    assert.equal(archiveRevision(cluster, spec()), '');
    const intoVolume = archiveRevision(cluster, spec({ schedule: '@daily', retain: 7 }));
    assert.match(intoVolume, /^[0-9a-f]{16}$/, 'the backup volume archives too, through the repository host');
    assert.equal(archiveRevision(cluster, spec({ schedule: '@hourly', retain: 2 })), intoVolume);
    const archiving = archiveRevision(cluster, spec({ schedule: '@daily', retain: 7, objectStore: store }));
    assert.match(archiving, /^[0-9a-f]{16}$/);
    assert.notEqual(archiving, intoVolume);
    assert.equal(archiveRevision(cluster, spec({ schedule: '@hourly', retain: 3, objectStore: store })), archiving);
    assert.notEqual(archiveRevision(cluster, spec({ schedule: '@daily', retain: 7, objectStore: { ...store, bucket: 'other' } })),
      archiving);
  });

  it('says whether WAL reaches the archive from PostgreSQL\'s archiver statistics', () => {
    const archiving = parseArchiverStats('12|000000010000000000000009|2026-11-26T02:00:00Z|0|||0||00000001\n');
    assert.deepEqual(archiving, { waitingCount: 0, archivedCount: 12, failedCount: 0, lastArchivedWal: '000000010000000000000009',
      lastArchivedTime: '2026-11-26T02:00:00Z', timeline: 1 });
    assert.equal(archivingCondition(archiving, 'db-0000').reason, 'Archiving');
    const failing = parseArchiverStats('12|000000010000000000000009|2026-11-26T02:00:00Z|3|00000001000000000000000A|2026-11-26T02:01:00Z|1|5|00000001');
    const condition = archivingCondition(failing, 'db-0000');
    assert.equal(condition.status, 'False');
    assert.equal(condition.reason, 'ArchiveFailing');
    assert.match(condition.message, /cannot archive WAL segment 00000001000000000000000A/);
    const recovered = parseArchiverStats('13|00000001000000000000000A|2026-11-26T02:02:00Z|3|00000001000000000000000A|2026-11-26T02:01:00Z|0||00000001');
    assert.equal(archivingCondition(recovered, 'db-0000').status, 'True');
    assert.equal(archivingCondition(parseArchiverStats('0|||0|||0||00000001'), 'db-0000').reason, 'NothingArchivedYet');
    assert.throws(() => parseArchiverStats('psql: error'), /unexpected archiver statistics/);
    assert.equal(parseArchiverStats('0|||0|||0||0000000A').timeline, 10);
    // A store that hangs fails nothing: segments waiting past two archive_timeouts say it.
    const hanging = parseArchiverStats('13|00000001000000000000000A|2026-11-26T02:02:00Z|0|||2|121|00000001');
    assert.equal(archivingCondition(hanging, 'db-0000').reason, 'ArchiveFailing');
    assert.match(archivingCondition(hanging, 'db-0000').message, /has 2 WAL segments waiting to be archived, the oldest for 121s/);
    assert.equal(archivingCondition(parseArchiverStats('13|00000001000000000000000A|2026-11-26T02:02:00Z|0|||1|30|00000001'),
      'db-0000').status, 'True');
  });
});
