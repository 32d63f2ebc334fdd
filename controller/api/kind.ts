// A custom kind (of the keelson.dev API unless told otherwise), and the CustomResourceDefinition that serves it.
import type { RequesterRight } from './admission.ts';
import type { ObjectNode, OpenApiSchema } from './schema.ts';

/** Where a kind is served. Keelson's own: keelson.dev/v1alpha1, in the category `keelson`. */
export interface ApiGroup {
  group: string;
  version: string;
  /** `kubectl get <category>` lists every kind in it; also the CRD's app.kubernetes.io/part-of label. */
  category: string;
}

export const keelsonApi: ApiGroup = { group: 'keelson.dev', version: 'v1alpha1', category: 'keelson' };

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description: string;
  priority?: number;
}

export interface KindDefinition<Spec, Status> {
  api: ApiGroup;
  kind: string;
  /** The lower-case kind plus "s", as every Keelson kind's plural is. */
  plural: string;
  singular: string;
  shortNames: string[];
  /** Cluster: its objects belong to no namespace (a ClusterPodAlert). @default Namespaced */
  scope?: 'Namespaced' | 'Cluster';
  /** What one object of the kind is, for `kubectl explain KIND`. */
  description: string;
  spec: ObjectNode<Spec, true>;
  status: ObjectNode<Status>;
  printerColumns: PrinterColumn[];
  /** Rights whoever creates an object of the kind, or changes its spec, must hold: what the controller does for them. */
  requesterRights?: RequesterRight[];
  /** Annotations that ask the controller to act (a backup, a switchover): setting one is checked as a spec change is. */
  actionAnnotations?: string[];
}

/** The object a controller reads: metadata as the apiserver returns it, spec and status typed by the schema. */
export interface Resource<Spec, Status> {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    generation: number;
    resourceVersion: string;
    creationTimestamp?: string;
    deletionTimestamp?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
  };
  spec: Spec;
  status?: Partial<Status>;
  [field: string]: unknown;
}

export type ResourceOf<D> = D extends KindDefinition<infer Spec, infer Status> ? Resource<Spec, Status> : never;

const readyColumn: PrinterColumn = {
  name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status',
  description: 'Whether the object is in the state its spec asks for.',
};
const ageColumn: PrinterColumn = {
  name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'Time since creation.',
};

export function defineKind<Spec, Status>(definition: Omit<KindDefinition<Spec, Status>, 'plural' | 'singular' | 'api'>
  & { api?: ApiGroup }): KindDefinition<Spec, Status> {
  const singular = definition.kind.toLowerCase();
  return { ...definition, api: definition.api ?? keelsonApi, singular, plural: `${singular}s` };
}

export const apiVersionOfKind = ({ api }: KindDefinition<unknown, unknown>): string => `${api.group}/${api.version}`;

export function crdName(definition: KindDefinition<unknown, unknown>): string {
  return `${definition.plural}.${definition.api.group}`;
}

/** The kind's CustomResourceDefinition as a plain manifest (keys exactly as the apiserver expects them). */
export function customResourceDefinition(definition: KindDefinition<unknown, unknown>): Record<string, unknown> {
  const columns = [...definition.printerColumns];
  if (!columns.some((c) => c.name === 'Ready')) columns.push(readyColumn);
  columns.push(ageColumn);
  const openAPIV3Schema: OpenApiSchema = {
    type: 'object',
    description: definition.description,
    required: ['spec'],
    properties: {
      apiVersion: { type: 'string', description: `The versioned schema of this object: ${apiVersionOfKind(definition)}.` },
      kind: { type: 'string', description: `The kind of this object: ${definition.kind}.` },
      metadata: { type: 'object' },
      spec: definition.spec.openApi,
      status: definition.status.openApi,
    },
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: crdName(definition), labels: { 'app.kubernetes.io/part-of': definition.api.category } },
    spec: {
      group: definition.api.group,
      scope: definition.scope ?? 'Namespaced',
      names: {
        kind: definition.kind,
        listKind: `${definition.kind}List`,
        plural: definition.plural,
        singular: definition.singular,
        shortNames: definition.shortNames,
        // Not a cluster-scoped kind in the namespaced ones' category: `kubectl delete keelson --all -n shop` would
        // delete every one of its objects in the cluster.
        categories: [definition.scope === 'Cluster' ? `${definition.api.category}-cluster` : definition.api.category],
      },
      versions: [{
        name: definition.api.version,
        served: true,
        storage: true,
        schema: { openAPIV3Schema },
        subresources: { status: {} },
        additionalPrinterColumns: columns,
      }],
    },
  };
}
