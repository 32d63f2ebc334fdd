// The kind: which ConfigMap of its namespace to copy, and where to. The apiserver checks every field against this.
import { array, defineKind, dns1123Label, dns1123Subdomain, integer, object, statusOf, string, type ApiGroup,
  type Infer, type ResourceOf } from 'keelson/api';

export const replicationApi: ApiGroup = { group: 'replication.example.com', version: 'v1alpha1', category: 'replication' };

const spec = object({
  source: string({ description: 'The ConfigMap in this namespace to copy.', required: true, maxLength: 253,
    pattern: dns1123Subdomain }),
  targetNamespaces: array(string({ description: 'A namespace.', maxLength: 63, pattern: dns1123Label }),
    { description: 'Where the copies go; each gets one of the same name.', required: true, minItems: 1, maxItems: 100 }),
}, { description: 'What to copy, and where.', required: true });

const status = statusOf({
  copies: integer({ description: 'Copies in step with the source.', minimum: 0 }),
});

export const ConfigMapReplication = defineKind({
  api: replicationApi,
  kind: 'ConfigMapReplication',
  shortNames: ['cmr'],
  description: 'ConfigMapReplication copies a ConfigMap of its namespace into other namespaces, keeps the copies in ' +
    'step with it, and removes them when it goes.',
  spec,
  status,
  printerColumns: [
    { name: 'Source', type: 'string', jsonPath: '.spec.source', description: 'The ConfigMap copied.' },
    { name: 'Copies', type: 'integer', jsonPath: '.status.copies', description: 'Copies in step.' },
  ],
});

export type ConfigMapReplicationSpec = Infer<typeof spec>;
export type ConfigMapReplicationResource = ResourceOf<typeof ConfigMapReplication>;
