import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { policyName, requesterPolicy } from '../controller/api/admission.ts';
import { crdName, customResourceDefinition, type KindDefinition } from '../controller/api/kind.ts';
import { kinds } from '../controller/operators/catalog.ts';
import { enabledOperators } from './install.ts';

/**
 * The CustomResourceDefinitions serving `kinds`, each with the admission policy that checks its requesters' own rights
 * (so no kind is served without its guard). Cluster-scoped: use a Chart without a namespace.
 */
export class CustomResourceDefinitions extends Construct {
  constructor(scope: Construct, id: string, props: { kinds: readonly KindDefinition<any, any>[] }) {
    super(scope, id);
    for (const kind of props.kinds) {
      // A plain ApiObject keeps schema keys verbatim (x-kubernetes-validations and friends).
      const { apiVersion, kind: crd, ...rest } = customResourceDefinition(kind) as { apiVersion: string; kind: string };
      new ApiObject(this, crdName(kind), { apiVersion, kind: crd, ...rest });
      for (const { apiVersion: version, kind: policyKind, ...policy } of requesterPolicy(kind) as { apiVersion: string; kind: string }[]) {
        new ApiObject(this, `${policyName(kind)}-${policyKind}`, { apiVersion: version, kind: policyKind, ...policy });
      }
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
