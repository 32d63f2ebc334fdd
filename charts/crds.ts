import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { customResourceDefinition } from '../controller/api/kind.ts';
import { enabledOperators } from './install.ts';

export interface KeelsonCrdsProps {
  /** Operators whose kinds to define, by catalog name. @default all of them */
  operators?: string[];
}

/** The CustomResourceDefinitions of the enabled operators' kinds. Cluster-scoped: use a Chart without a namespace. */
export class KeelsonCrds extends Construct {
  constructor(scope: Construct, id: string, props: KeelsonCrdsProps = {}) {
    super(scope, id);
    for (const entry of enabledOperators(props.operators)) {
      // A plain ApiObject keeps schema keys verbatim (x-kubernetes-validations and friends).
      const { apiVersion, kind, ...rest } = customResourceDefinition(entry.kind) as { apiVersion: string; kind: string };
      new ApiObject(this, entry.name, { apiVersion, kind, ...rest });
    }
  }
}
