// What the operators' samples share: the stand-in images they name and a hardened one-container Deployment. The
// images are the local cluster's stand-ins (images/recipes.ts builds them from the package registries under names of
// their own, and `npm start` loads them into its node); README says which public image each stands in for.
import { k8s } from 'cdk8s-plus-27';
import type { Construct } from 'constructs';

/** Adds an operator's example, with the workloads it acts on, to the samples chart. */
export type SampleWriter = (scope: Construct) => void;

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
export function sampleApp(scope: Construct, name: string, image: string, extra: { port: number; tmp?: boolean }): void {
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
