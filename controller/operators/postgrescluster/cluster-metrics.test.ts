import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Registry } from 'prom-client';
import { registerClusterMetrics } from './cluster-metrics.ts';
import type { PostgresClusterResource } from './schema.ts';

const cluster = (name: string, backup?: object, lastBackup?: string, made = '2026-11-20T00:00:00Z', paused = false,
  notAfter?: string) => ({
  apiVersion: 'keelson.dev/v1alpha1', kind: 'PostgresCluster', metadata: { name, namespace: 'db', creationTimestamp: made },
  spec: { size: 1, version: '15', paused, ...(backup ? { backup } : {}) },
  status: { ...(lastBackup ? { lastBackup: { name: 'b', time: lastBackup } } : {}),
    ...(notAfter ? { tls: { source: 'operator', notAfter } } : {}) },
}) as unknown as PostgresClusterResource;

it('exports when each cluster\'s latest backup ended and when its schedule last fired, for clusters with backups, ' +
  'and when the certificate each serves expires', async () => {
  const registry = new Registry();
  let clusters = [cluster('daily', { schedule: '0 3 * * *' }, '2026-11-26T03:04:05Z'),
    cluster('never', { schedule: '@hourly' }), cluster('none', undefined, undefined, undefined, false, '2027-02-24T10:00:00Z'),
    // Made after the schedule last fired: no backup asked of it yet. Paused: none taken.
    cluster('new', { schedule: '0 3 * * *' }, undefined, '2026-11-26T10:00:00Z'),
    cluster('paused', { schedule: '@hourly' }, undefined, undefined, true)];
  registerClusterMetrics(registry, () => clusters, () => new Date('2026-11-26T10:30:00Z'));
  const text = await registry.metrics();
  const series = text.split('\n').filter((line) => line && !line.startsWith('#')).sort();
  assert.deepEqual(series, [
    'keelson_postgrescluster_backup_scheduled_timestamp_seconds{namespace="db",name="daily"} ' +
      Date.parse('2026-11-26T03:00:00Z') / 1000,
    'keelson_postgrescluster_backup_scheduled_timestamp_seconds{namespace="db",name="never"} ' +
      Date.parse('2026-11-26T10:00:00Z') / 1000,
    'keelson_postgrescluster_certificate_expiry_timestamp_seconds{namespace="db",name="none"} ' +
      Date.parse('2027-02-24T10:00:00Z') / 1000,
    'keelson_postgrescluster_last_backup_timestamp_seconds{namespace="db",name="daily"} ' +
      Date.parse('2026-11-26T03:04:05Z') / 1000,
    'keelson_postgrescluster_last_backup_timestamp_seconds{namespace="db",name="never"} 0',
    'keelson_postgrescluster_last_backup_timestamp_seconds{namespace="db",name="new"} 0',
  ]);
  // A cluster deleted, or its backups turned off, leaves no series behind.
  clusters = [];
  assert.doesNotMatch(await registry.metrics(), /namespace="db"/);
});
