import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { crdName, customResourceDefinition, type KindDefinition } from '../controller/api/kind.ts';
import { kinds } from '../controller/operators/catalog.ts';
import { enabledOperators } from './install.ts';

/** The CustomResourceDefinitions serving `kinds`. Cluster-scoped: use a Chart without a namespace. */
export class CustomResourceDefinitions extends Construct {
  constructor(scope: Construct, id: string, props: { kinds: readonly KindDefinition<any, any>[] }) {
    super(scope, id);
    for (const kind of props.kinds) {
      // A plain ApiObject keeps schema keys verbatim (x-kubernetes-validations and friends).
      const { apiVersion, kind: crd, ...rest } = customResourceDefinition(kind) as { apiVersion: string; kind: string };
      new ApiObject(this, crdName(kind), { apiVersion, kind: crd, ...rest });
    }
  }
}

export interface KeelsonCrdsProps {
  /** Operators whose kinds to define, by catalog name. @default every kind of the API */
  operators?: string[];
}

/** The CustomResourceDefinitions of Keelson's kinds. */
export class KeelsonCrds extends CustomResourceDefinitions {
  constructor(scope: Construct, id: string, props: KeelsonCrdsProps = {}) {
    super(scope, id, { kinds: props.operators ? enabledOperators(props.operators).map((entry) => entry.kind) : kinds });
  }
}
