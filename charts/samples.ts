// One example per kind, written with the typed constructs in imports/, as a GitOps repository would write them.
import { Chart } from 'cdk8s';
import type { Construct } from 'constructs';
import {
  PodAlert, PodBuggerTool, PostgresCluster, PostgresClusterSpecStorageSize, PrometheusJmxExporter, TdSet,
} from '../imports/keelson-keelson.dev.ts';

export interface SamplesProps {
  namespace: string;
}

export class Samples extends Chart {
  constructor(scope: Construct, id: string, props: SamplesProps) {
    super(scope, id, { namespace: props.namespace, disableResourceNameHashes: true });

    new TdSet(this, 'tdset', {
      metadata: { name: 'hello-world' },
      spec: {
        container: { image: 'crccheck/hello-world:v1.0.0', port: 8000 },
        service: { port: 80 },
        // Office hours busy, evenings quieter, nights low; 0-1 falls back to defaultReplica.
        schedulingConfig: [
          { startTime: 9, endTime: 17, replica: 5 },
          { startTime: 17, endTime: 19, replica: 3 },
          { startTime: 19, endTime: 0, replica: 2 },
          { startTime: 1, endTime: 7, replica: 2 },
          { startTime: 7, endTime: 9, replica: 3 },
        ],
        defaultReplica: 3,
        timeZone: 'Europe/Berlin',
      },
    });

    new PodBuggerTool(this, 'podbuggertool', {
      metadata: { name: 'debug-course' },
      spec: { label: 'app=teachstore-course', image: 'busybox:1.36' },
    });

    new PodAlert(this, 'podalert', {
      metadata: { name: 'unhealthy-pods' },
      spec: { alerts: { checkRunningPods: true }, gracePeriodSeconds: 60, logLines: 20 },
    });

    new PostgresCluster(this, 'postgrescluster', {
      metadata: { name: 'orders-db' },
      spec: {
        size: 3,
        version: '17',
        storage: { size: PostgresClusterSpecStorageSize.fromString('1Gi') },
        antiAffinity: true,
        backup: { schedule: '0 3 * * *', retain: 7 },
      },
    });

    new PrometheusJmxExporter(this, 'prometheusjmxexporter', {
      metadata: { name: 'java-apps' },
      spec: {
        labelSelector: { app: 'java-app' },
        config: { configMapName: 'jmx-exporter-config', configMapKey: 'config.yaml' },
        port: 9404,
      },
    });
  }
}
