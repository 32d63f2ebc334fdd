import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseScaleResources, scaleResourceText } from './scale-resources.ts';
import { targetType } from './target.ts';

const widgets = { group: 'example.com', resource: 'widgets', kind: 'Widget' };

describe('custom resources an install lets TDSets scale', () => {
  it('are read back as the install writes them, and refused when malformed or not custom', () => {
    const listed = [widgets, { group: 'db.example.org', resource: 'clusters', kind: 'Cluster' }];
    assert.deepEqual(parseScaleResources(listed.map(scaleResourceText).join(',')), listed);
    assert.deepEqual(parseScaleResources(undefined), []);
    assert.throws(() => parseScaleResources('widgets:Widget'), /"widgets:Widget" is not <resource>.<group>:<Kind>/);
    assert.throws(() => parseScaleResources('widgets.example.com'), /is not <resource>.<group>:<Kind>/);
    assert.throws(() => parseScaleResources('deployments.apps:Deployment'), /apps is not a custom resource's group/);
    assert.throws(() => parseScaleResources('x.metrics.k8s.io:X'), /metrics.k8s.io is not a custom resource's group/);
  });

  it('are the only kinds besides apps/v1 workloads a scaleTargetRef reaches, in the version it names', () => {
    const ref = (apiVersion: string, kind: string, resource?: string) => ({ apiVersion, kind, name: 'w', resource });
    assert.deepEqual(targetType(ref('example.com/v2', 'Widget', 'widgets'), [widgets]),
      { group: 'example.com', version: 'v2', resource: 'widgets', kind: 'Widget', namespaced: true });
    assert.equal((targetType(ref('apps/v1', 'StatefulSet'), []) as { resource: string }).resource, 'statefulsets');
    assert.match((targetType(ref('example.com/v1', 'Gizmo', 'gizmos'), [widgets]) as { notScalable: string }).notScalable,
      /^this install scales Deployments, StatefulSets, ReplicaSets and widgets.example.com:Widget, not gizmos.example.com:Gizmo/);
    // Group, plural and kind must all be the install's: admission checked the plural the ref gives.
    assert.ok('notScalable' in targetType(ref('other.example.com/v1', 'Widget', 'widgets'), [widgets]));
    assert.ok('notScalable' in targetType(ref('example.com/v1', 'Widget', 'gadgets'), [widgets]));
    assert.ok('notScalable' in targetType(ref('apps/v1', 'DaemonSet'), [widgets]));
  });
});
