// The Deployment a TDSet owns: admitted under the restricted Pod Security Standard by default, with the user, group
// and resources the spec asks for when it asks.
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { restrictedContainerSecurity, smallContainerResources, unprivilegedUser } from '../../api/pod-security.ts';
import { deploymentFor } from './reconcile.ts';
import type { TDSetResource, TDSetSpec } from './schema.ts';

const tdsetWith = (container: TDSetSpec['container'], template?: TDSetSpec['template']) => {
  const spec = { ...(template ? { template } : { container }), schedulingConfig: [], defaultReplica: 1, timeZone: 'UTC',
    paused: false, restoreOnDelete: true } as TDSetSpec;
  const tdset = { apiVersion: 'keelson.dev/v1alpha1', kind: 'TDSet', spec,
    metadata: { name: 'web', namespace: 'shop', uid: 'u-1' } } as TDSetResource & { metadata: { uid: string } };
  // The template as the apiserver would read it: the Deployment type here names only what reconcile reads.
  return (deploymentFor(tdset, spec, 2) as any).spec.template;
};

it('runs the container unprivileged, as a user no image needs to know, with modest resources', () => {
  const pod = tdsetWith({ image: 'nginx:1.27', port: 8080 }).spec;
  assert.deepEqual(pod.securityContext, { runAsNonRoot: true, runAsUser: unprivilegedUser, runAsGroup: unprivilegedUser,
    seccompProfile: { type: 'RuntimeDefault' } });
  assert.deepEqual(pod.containers[0].securityContext, restrictedContainerSecurity);
  assert.deepEqual(pod.containers[0].resources, smallContainerResources);
});

it('takes the user, group and resources the spec names, and still never root', () => {
  const resources = { requests: { cpu: '500m', memory: '1Gi' }, limits: { memory: '2Gi' } };
  const pod = tdsetWith({ image: 'nginx:1.27', port: 8080, runAsUser: 101, runAsGroup: 101, resources }).spec;
  assert.deepEqual([pod.securityContext.runAsUser, pod.securityContext.runAsGroup, pod.securityContext.runAsNonRoot],
    [101, 101, true]);
  assert.deepEqual(pod.containers[0].resources, resources);
});

it('takes a whole pod template, hardened where it says nothing, with the TDSet\'s labels on its pods', () => {
  const template = { metadata: { labels: { tier: 'web' }, annotations: { a: 'b' } }, spec: {
    serviceAccountName: 'web', securityContext: { runAsUser: 101 },
    initContainers: [{ name: 'migrate', image: 'app:1', securityContext: { readOnlyRootFilesystem: true } }],
    containers: [{ name: 'app', image: 'app:1', env: [{ name: 'MODE', value: 'live' }],
      readinessProbe: { httpGet: { path: '/ready', port: 8080 } },
      securityContext: { capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] } } }] } };
  const made = tdsetWith(undefined, template);
  assert.deepEqual(made.metadata.labels, { tier: 'web', 'app.kubernetes.io/name': 'web', 'app.kubernetes.io/instance': 'web',
    'app.kubernetes.io/managed-by': 'keelson' });
  assert.deepEqual(made.metadata.annotations, { a: 'b' });
  assert.equal(made.spec.serviceAccountName, 'web');
  assert.deepEqual(made.spec.securityContext, { runAsNonRoot: true, runAsUser: 101, runAsGroup: unprivilegedUser,
    seccompProfile: { type: 'RuntimeDefault' } });
  const [app] = made.spec.containers;
  assert.deepEqual([app.env, app.readinessProbe], [template.spec.containers[0]!.env, template.spec.containers[0]!.readinessProbe]);
  assert.deepEqual(app.securityContext, { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] } });
  assert.deepEqual(made.spec.initContainers[0].securityContext, { ...restrictedContainerSecurity, readOnlyRootFilesystem: true });
});

it('keeps dropping every capability when a template only adds one', () => {
  const made = tdsetWith(undefined, { spec: { containers: [{ name: 'app', image: 'app:1',
    securityContext: { capabilities: { add: ['NET_BIND_SERVICE'] } } }] } });
  assert.deepEqual(made.spec.containers[0].securityContext.capabilities, { drop: ['ALL'], add: ['NET_BIND_SERVICE'] });
});
