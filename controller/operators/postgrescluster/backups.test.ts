import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dueScheduledToken, lastBackupStatus, parseRepositoryInfo, startBackupScript, tokenProblem } from './backups.ts';

// `pgbackrest info --output=json` as pgBackRest 2.45 prints it, trimmed to what is read.
const info = (lock: object, backups: object[]) => JSON.stringify([{ name: 'shop', status: { code: 0, message: 'ok', lock },
  backup: backups }]);
const full = {
  label: '20261126-021500F', type: 'full', annotation: { 'keelson.dev/request': 'before-t' },
  archive: { start: '000000010000000000000004', stop: '000000010000000000000004' },
  lsn: { start: '0/4000028', stop: '0/4000138' },
  timestamp: { start: 1795659300, stop: 1795659307 },
  info: { size: 30_000_000, delta: 30_000_000, repository: { size: 4_000_000, delta: 4_000_000 } },
};

describe('backups into the object store', () => {
  it('reads a backup, its WAL range and sizes from pgBackRest\'s repository', () => {
    const parsed = parseRepositoryInfo(info({ backup: { held: false } }, [full]));
    assert.equal(parsed.running, false);
    assert.equal(parsed.backups[0]!.request, 'before-t');
    assert.deepEqual(lastBackupStatus(parsed.backups[0]!), { name: '20261126-021500F', time: '2026-11-26T02:15:07Z',
      type: 'full', beginWal: '000000010000000000000004', endWal: '000000010000000000000004', beginLSN: '0/4000028',
      endLSN: '0/4000138', sizeBytes: 30_000_000, repositorySizeBytes: 4_000_000, durationSeconds: 7 });
  });

  it('sees a backup under way, with its progress, and a stanza with nothing yet', () => {
    const running = parseRepositoryInfo(info({ backup: { held: true, 'pct-cplt': 4250 } }, []));
    assert.deepEqual(running, { running: true, percentComplete: 42.5, backups: [] });
    assert.deepEqual(parseRepositoryInfo('[]'), { backups: [], running: false });
  });

  it('is due on schedule once per fire time, counting from the last one taken or from the cluster\'s creation', () => {
    const now = new Date('2026-11-26T03:10:00Z');
    assert.equal(dueScheduledToken('0 3 * * *', undefined, '2026-11-25T12:00:00Z', now), 'scheduled-20261126T0300Z');
    assert.equal(dueScheduledToken('0 3 * * *', 'scheduled-20261126T0300Z', '2026-11-25T12:00:00Z', now), undefined);
    assert.equal(dueScheduledToken('0 3 * * *', undefined, '2026-11-26T03:05:00Z', now), undefined);
    // Missed times are one backup, the latest: a controller down for two days takes one.
    assert.equal(dueScheduledToken('0 3 * * *', 'scheduled-20261124T0300Z', '2026-11-01T00:00:00Z', now),
      'scheduled-20261126T0300Z');
    assert.equal(tokenProblem('scheduled-20261126T0300Z'), undefined);
  });

  it('takes only tokens that are safe in a shell and a file name', () => {
    assert.equal(tokenProblem('nightly-2026.11.26_1'), undefined);
    assert.match(tokenProblem('x; rm -rf /')!, /must be 1-63 letters/);
    assert.match(tokenProblem('')!, /must be 1-63 letters/);
    assert.match(startBackupScript('before-t'), /--annotation=keelson.dev\/request=before-t .*\n.*backup-before-t.log/);
  });
});
