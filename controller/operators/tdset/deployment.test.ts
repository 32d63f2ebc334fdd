// The Deployment a TDSet owns: admitted under the restricted Pod Security Standard by default, with the user, group
// and resources the spec asks for when it asks.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { restrictedContainerSecurity, smallContainerResources, unprivilegedUser } from '../../api/pod-security.ts';
import { deploymentFor } from './reconcile.ts';
import type { TDSetResource, TDSetSpec } from './schema.ts';

const tdsetWith = (container: TDSetSpec['container']) => {
  const spec = { container, schedulingConfig: [], defaultReplica: 1, timeZone: 'UTC' } as TDSetSpec;
  const tdset = { apiVersion: 'keelson.dev/v1alpha1', kind: 'TDSet', spec,
    metadata: { name: 'web', namespace: 'shop', uid: 'u-1' } } as TDSetResource & { metadata: { uid: string } };
  // The template as the apiserver would read it: the Deployment type here names only what reconcile reads.
  return (deploymentFor(tdset, spec, 2) as any).spec.template.spec;
};

it('runs the container unprivileged, as a user no image needs to know, with modest resources', () => {
  const pod = tdsetWith({ image: 'nginx:1.27', port: 8080 });
  assert.deepEqual(pod.securityContext, { runAsNonRoot: true, runAsUser: unprivilegedUser, runAsGroup: unprivilegedUser,
    seccompProfile: { type: 'RuntimeDefault' } });
  assert.deepEqual(pod.containers[0].securityContext, restrictedContainerSecurity);
  assert.deepEqual(pod.containers[0].resources, smallContainerResources);
});

it('takes the user, group and resources the spec names, and still never root', () => {
  const resources = { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } };
  const pod = tdsetWith({ image: 'nginx:1.27', port: 8080, runAsUser: 101, runAsGroup: 101, resources });
  assert.deepEqual([pod.securityContext.runAsUser, pod.securityContext.runAsGroup, pod.securityContext.runAsNonRoot],
    [101, 101, true]);
  assert.deepEqual(pod.containers[0].resources, resources);
});
