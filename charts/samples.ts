// One example per kind, written with the typed constructs in imports/, as a GitOps repository would write them, with
// the workloads they act on. The images are the local cluster's stand-ins (images/recipes.ts builds them from the
// package registries under names of their own, and `npm start` loads them into its node); README says which public
// image each stands in for.
import { Chart } from 'cdk8s';
import { k8s } from 'cdk8s-plus-27';
import type { Construct } from 'constructs';
import {
  PodAlert, PodBuggerTool, PostgresCluster, PostgresClusterSpecStorageSize, PrometheusJmxExporter, TdSet,
} from '../imports/keelson-keelson.dev.ts';

export interface SamplesProps {
  namespace: string;
}

/** The stand-in images, by what they stand in for. */
export const sampleImages = {
  helloWorld: 'keelson.local/hello-world:1',
  tools: 'keelson.local/tools:1',
  postgresql: 'keelson.local/postgresql:15',
  javaApp: 'keelson.local/java-app:1',
};

const hardened = { allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: { drop: ['ALL'] },
  seccompProfile: { type: 'RuntimeDefault' } };

/** A one-replica Deployment of `image` whose pods carry app=`name`. */
function sampleApp(scope: Construct, name: string, image: string, extra: { port: number; tmp?: boolean }): void {
  const labels = { app: name };
  new k8s.KubeDeployment(scope, name, {
    metadata: { name, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          containers: [{ name: 'app', image, ports: [{ containerPort: extra.port }], securityContext: hardened,
            ...(extra.tmp ? { volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }] } : {}) }],
          ...(extra.tmp ? { volumes: [{ name: 'tmp', emptyDir: {} }] } : {}),
        },
      },
    },
  });
}

export class Samples extends Chart {
  constructor(scope: Construct, id: string, props: SamplesProps) {
    super(scope, id, { namespace: props.namespace, disableResourceNameHashes: true });

    new TdSet(this, 'tdset', {
      metadata: { name: 'hello-world' },
      spec: {
        container: { image: sampleImages.helloWorld, port: 8000 },
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

    // The course service that PodBuggerTool gives a debug container.
    sampleApp(this, 'teachstore-course', sampleImages.helloWorld, { port: 8000 });
    new PodBuggerTool(this, 'podbuggertool', {
      metadata: { name: 'debug-course' },
      spec: { label: 'app=teachstore-course', image: sampleImages.tools },
    });

    new PodAlert(this, 'podalert', {
      metadata: { name: 'unhealthy-pods' },
      spec: { alerts: { checkRunningPods: true }, gracePeriodSeconds: 60, logLines: 20 },
    });

    new PostgresCluster(this, 'postgrescluster', {
      metadata: { name: 'orders-db' },
      spec: {
        size: 3,
        version: '15',
        image: sampleImages.postgresql,
        storage: { size: PostgresClusterSpecStorageSize.fromString('1Gi') },
        antiAffinity: true,
        backup: { schedule: '0 3 * * *', retain: 7 },
      },
    });

    // A JVM service (its attach socket in /tmp, an emptyDir) and what the exporter exports of it.
    sampleApp(this, 'java-app', sampleImages.javaApp, { port: 8080, tmp: true });
    new k8s.KubeConfigMap(this, 'jmx-exporter-config', {
      metadata: { name: 'jmx-exporter-config' },
      data: { 'config.yaml': 'lowercaseOutputName: true\nrules:\n- pattern: ".*"\n' },
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
