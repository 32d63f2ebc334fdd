import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { exposition, synchronousQuorum, walSegmentEnd } from './metrics.ts';

describe('the agent\'s PostgreSQL metrics', () => {
  it('reads the quorum a commit waits for from synchronous_standby_names', () => {
    assert.equal(synchronousQuorum(''), 0);
    assert.equal(synchronousQuorum('ANY 2 ("a", "b", "c")'), 2);
    assert.equal(synchronousQuorum('first 1 (a, b)'), 1);
    assert.equal(synchronousQuorum('3 (a, b, c)'), 3);
    assert.equal(synchronousQuorum('a, b'), 1);
    assert.equal(synchronousQuorum('*'), 1);
  });

  it('places the end of a WAL segment across the 4 GiB boundary of its log', () => {
    const mib16 = 16 * 1024 * 1024;
    assert.equal(walSegmentEnd('000000010000000000000003', mib16), 4 * mib16);
    assert.equal(walSegmentEnd('0000000200000001000000FF', mib16), 2 ** 32 + 256 * mib16);
    assert.throws(() => walSegmentEnd('00000002.history', mib16), /not a WAL segment/);
  });

  it('writes each family\'s help and type once, before its samples, and escapes label values', () => {
    const text = exposition([
      ['keelson_postgres_backends', { datname: 'app"1', state: 'idle' }, 3],
      ['keelson_postgres_up', {}, 1],
      ['keelson_postgres_backends', { datname: 'b', state: 'active' }, 1],
    ]);
    assert.deepEqual(text.split('\n'), [
      '# HELP keelson_postgres_up Whether the agent could read PostgreSQL\'s statistics at this scrape.',
      '# TYPE keelson_postgres_up gauge',
      'keelson_postgres_up 1',
      '# HELP keelson_postgres_backends Client connections, per database and state.',
      '# TYPE keelson_postgres_backends gauge',
      'keelson_postgres_backends{datname="app\\"1",state="idle"} 3',
      'keelson_postgres_backends{datname="b",state="active"} 1',
      '',
    ]);
  });
});
