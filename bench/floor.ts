// The floor: the writes a TDSet controller must make, and nothing else. It is told of each TDSet by the benchmark
// itself (no watch, no cache, no reads) and at once creates the Deployment and writes the status, or patches the
// replicas; whatever a real controller adds on top of this is its cost.
import type { RestClient } from '../controller/runtime/rest.ts';
import { pathOf, types } from '../controller/runtime/resources.ts';
import { deploymentFor } from '../controller/operators/tdset/reconcile.ts';
import { tdsetType, type TDSetObject } from './workload.ts';

export class Floor {
  constructor(private readonly client: RestClient) {}

  async created(tdset: TDSetObject): Promise<void> {
    await this.client.json({ method: 'POST', path: pathOf(types.deployments, tdset.metadata.namespace),
      body: deploymentFor(tdset, tdset.spec, tdset.spec.defaultReplica) });
    await this.writeStatus(tdset);
  }

  async changed(tdset: TDSetObject): Promise<void> {
    await this.client.json({ method: 'PATCH', path: pathOf(types.deployments, tdset.metadata.namespace, tdset.metadata.name),
      contentType: 'application/merge-patch+json', body: { spec: { replicas: tdset.spec.defaultReplica } } });
    await this.writeStatus(tdset);
  }

  private async writeStatus(tdset: TDSetObject): Promise<void> {
    const { namespace, name, generation } = tdset.metadata;
    const replicas = tdset.spec.defaultReplica;
    await this.client.json({ method: 'PATCH', path: pathOf(tdsetType, namespace, name, 'status'),
      contentType: 'application/merge-patch+json', body: { status: { desiredReplicas: replicas, activeWindow: 'default',
        observedGeneration: generation, conditions: [{ type: 'Ready', status: 'False', reason: 'Unavailable',
          message: `0 of ${replicas} replicas available`, lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
          observedGeneration: generation }] } } });
  }
}
