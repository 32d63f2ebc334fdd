import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { appliedFields, ownsMoreThan, type FieldSet } from './managed-fields.ts';

// As the apiserver records an apply of the Deployment below (fieldsV1).
const owned: FieldSet = {
  'f:metadata': { 'f:labels': { 'f:app': {}, 'f:tier': {} }, 'f:finalizers': { 'v:"keelson.dev/cleanup"': {} } },
  'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"web"}': { '.': {}, 'f:name': {}, 'f:image': {},
    'f:env': { 'k:{"name":"MODE"}': { '.': {}, 'f:name': {}, 'f:value': {} } },
    'f:ports': { 'k:{"containerPort":8080,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} } } } } } } },
};

function deployment({ labels = { app: 'web', tier: 'front' }, env = [{ name: 'MODE', value: 'fast' }],
  ports = [{ containerPort: 8080 }] as object[], finalizers = ['keelson.dev/cleanup'] } = {}) {
  return { metadata: { name: 'web', labels, finalizers },
    spec: { template: { spec: { containers: [{ name: 'web', image: 'web:1', env, ports }] } } } };
}

describe('fields a manager applied', () => {
  it('finds nothing more when everything owned is still wanted (a defaulted key such as protocol included)', () => {
    assert.equal(ownsMoreThan(owned, deployment()), false);
    assert.equal(ownsMoreThan(owned, deployment({ ports: [{ containerPort: 8080, protocol: 'TCP' }] })), false);
  });

  it('finds a label, an env var, a port or a set member no longer wanted', () => {
    assert.equal(ownsMoreThan(owned, deployment({ labels: { app: 'web' } as never })), true);
    assert.equal(ownsMoreThan(owned, deployment({ env: [] })), true);
    assert.equal(ownsMoreThan(owned, deployment({ ports: [{ containerPort: 9090 }] })), true);
    assert.equal(ownsMoreThan(owned, deployment({ finalizers: [] })), true);
  });

  it('reads only the applier\'s own entry, not another manager\'s or a subresource\'s', () => {
    const object = { metadata: { name: 'web', managedFields: [
      { manager: 'keelson-tdset', operation: 'Apply', subresource: 'status', fieldsV1: { 'f:status': {} } },
      { manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': {} } },
      { manager: 'keelson-tdset', operation: 'Apply', fieldsV1: owned },
    ] } };
    assert.equal(appliedFields(object, 'keelson-tdset'), owned);
    assert.equal(appliedFields(object, 'keelson-podalert'), undefined);
  });
});
