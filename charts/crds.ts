import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { crdName, customResourceDefinition } from '../controller/api/kind.ts';
import { kinds } from '../controller/operators/catalog.ts';
import { enabledOperators } from './install.ts';

export interface KeelsonCrdsProps {
  /** Operators whose kinds to define, by catalog name. @default every kind of the API */
  operators?: string[];
}

/** The CustomResourceDefinitions of the API's kinds. Cluster-scoped: use a Chart without a namespace. */
export class KeelsonCrds extends Construct {
  constructor(scope: Construct, id: string, props: KeelsonCrdsProps = {}) {
    super(scope, id);
    const chosen = props.operators ? enabledOperators(props.operators).map((entry) => entry.kind) : kinds;
    for (const kind of chosen) {
      // A plain ApiObject keeps schema keys verbatim (x-kubernetes-validations and friends).
      const { apiVersion, kind: crd, ...rest } = customResourceDefinition(kind) as { apiVersion: string; kind: string };
      new ApiObject(this, crdName(kind), { apiVersion, kind: crd, ...rest });
    }
  }
}
