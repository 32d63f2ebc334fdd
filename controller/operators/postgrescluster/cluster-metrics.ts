// What the operator knows of each cluster and PostgreSQL does not, exported from the cache at each scrape: when its
// latest base backup ended, and when its schedule last asked for one, which together say a backup is overdue; and
// when the certificate its members serve expires, which says a renewal (ours, or a user's issuer's) is not coming. The
// series carry the cluster's namespace, which the ServiceMonitor honours (honorLabels) over the controller's own.
import { Gauge, type Registry } from 'prom-client';
import { parseSchedule, previousFire } from './cron.ts';
import type { PostgresClusterResource } from './schema.ts';

export const clusterMetricNames = ['keelson_postgrescluster_last_backup_timestamp_seconds',
  'keelson_postgrescluster_backup_scheduled_timestamp_seconds',
  'keelson_postgrescluster_certificate_expiry_timestamp_seconds'] as const;

/** Registers the gauges, read from `clusters()` at each scrape. */
export function registerClusterMetrics(registry: Registry, clusters: () => PostgresClusterResource[],
  now: () => Date = () => new Date()): void {
  const labelNames = ['namespace', 'name'];
  const seconds = (date: Date) => Math.floor(date.getTime() / 1000);
  // Only a firing since the cluster was made asked it for a backup.
  const scheduled = (cluster: PostgresClusterResource) => {
    try {
      const at = previousFire(parseSchedule(cluster.spec.backup!.schedule), now());
      const made = cluster.metadata.creationTimestamp;
      return at && (!made || at.getTime() >= Date.parse(made)) ? at : undefined;
    } catch {
      return undefined;
    }
  };
  // A paused cluster takes no backups, and says so in its conditions rather than in an alert.
  const withBackups = () => clusters().filter((c) => c.spec?.backup?.schedule && !c.spec.paused);
  new Gauge({ name: clusterMetricNames[0], registers: [registry], labelNames,
    help: 'When the latest successful base backup of each PostgresCluster with backups ended (0: none yet)',
    collect() {
      this.reset();
      for (const c of withBackups()) {
        const time = c.status?.lastBackup?.time;
        this.set({ namespace: c.metadata.namespace!, name: c.metadata.name }, time ? seconds(new Date(time)) : 0);
      }
    } });
  new Gauge({ name: clusterMetricNames[1], registers: [registry], labelNames,
    help: 'When spec.backup.schedule last asked for a base backup, per PostgresCluster',
    collect() {
      this.reset();
      for (const c of withBackups()) {
        const at = scheduled(c);
        if (at) this.set({ namespace: c.metadata.namespace!, name: c.metadata.name }, seconds(at));
      }
    } });
  new Gauge({ name: clusterMetricNames[2], registers: [registry], labelNames,
    help: 'When the server certificate the members of each PostgresCluster serve expires (status.tls.notAfter)',
    collect() {
      this.reset();
      for (const c of clusters()) {
        const notAfter = c.status?.tls?.notAfter;
        if (notAfter) this.set({ namespace: c.metadata.namespace!, name: c.metadata.name }, seconds(new Date(notAfter)));
      }
    } });
}
