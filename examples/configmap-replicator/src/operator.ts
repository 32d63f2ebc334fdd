// The operator: its permissions (the install's RBAC is made from them, and its client refuses anything else) and its
// reconcile. Copies carry labels naming their ConfigMapReplication, which is how a change to a copy finds it, and
// how copies no longer wanted are found. They live in other namespaces, where no owner reference may point, so a
// finalizer removes them before the ConfigMapReplication goes.
import { ownKind, type Permission } from 'keelson/api';
import { applyIfChanged, kindType, keyOf, primariesConcerning, readPrimary, setCondition, types, withFinalizer,
  writeStatus, type Condition, type KubeObject, type Operator, type OperatorContext, type Owner,
  type Request } from 'keelson/runtime';
import { ConfigMapReplication, replicationApi, type ConfigMapReplicationResource } from './schema.ts';

export const permissions: Permission[] = [
  ...ownKind('configmapreplications', { ownsObjects: false, group: replicationApi.group }),
  { group: replicationApi.group, resource: 'configmapreplications', verbs: ['patch'],
    reason: 'add and remove the finalizer that removes the copies' },
  { group: '', resource: 'configmaps', verbs: ['list', 'watch', 'create', 'patch', 'delete'],
    reason: 'read sources, and write and remove copies in the target namespaces' },
];

const replicationType = kindType(ConfigMapReplication);
const finalizer = `${replicationApi.group}/copies`;
const fromNamespace = `${replicationApi.group}/namespace`;
const fromName = `${replicationApi.group}/name`;

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
}

type Outcome = Pick<Condition, 'status' | 'reason' | 'message'>;

class Replicator {
  private readonly replications;
  private readonly configMaps;

  constructor(private readonly ctx: OperatorContext) {
    this.replications = ctx.cache.informer<ConfigMapReplicationResource>(replicationType, ctx.namespace, ctx.client);
    this.configMaps = ctx.cache.informer<ConfigMap>(types.configMaps, undefined, ctx.client);
  }

  /** The ConfigMapReplications an event on a ConfigMap concerns: those copying it, or the one it is a copy for. */
  concerned(configMap: KubeObject): Request[] {
    const labels = configMap.metadata.labels ?? {};
    const owner = labels[fromNamespace] && labels[fromName] ? [{ namespace: labels[fromNamespace], name: labels[fromName] }] : [];
    return [...owner, ...primariesConcerning(this.replications, configMap,
      (replication) => replication.spec.source === configMap.metadata.name)];
  }

  async reconcile(request: Request): Promise<void> {
    const cached = this.replications.get(keyOf(request));
    if (!cached) return;
    const live = readPrimary(this.replications, request, ConfigMapReplication);
    const replication = (live?.object ?? cached) as ConfigMapReplicationResource & Owner;
    await withFinalizer(this.ctx.client, replicationType, replication, finalizer, {
      apply: async () => {
        if (live!.problems.length) {
          return this.report(replication, 0, { status: 'False', reason: 'InvalidSpec',
            message: `${live!.problems.join('; ')}; nothing was changed` });
        }
        return this.replicate(replication, live!.spec.targetNamespaces);
      },
      cleanup: async () => this.remove(this.copiesOf(replication)),
    });
  }

  private copiesOf(replication: ConfigMapReplicationResource): ConfigMap[] {
    return this.configMaps.list().filter((c) => c.metadata.labels?.[fromNamespace] === replication.metadata.namespace &&
      c.metadata.labels?.[fromName] === replication.metadata.name);
  }

  private async remove(copies: ConfigMap[]): Promise<void> {
    for (const copy of copies) await this.ctx.client.delete(types.configMaps, copy.metadata.namespace, copy.metadata.name);
  }

  private async replicate(replication: ConfigMapReplicationResource & Owner, targets: string[]): Promise<void> {
    const { namespace, name } = replication.metadata;
    const source = this.configMaps.get(`${namespace}/${replication.spec.source}`);
    if (!source) {
      return this.report(replication, 0, { status: 'False', reason: 'SourceNotFound',
        message: `ConfigMap ${replication.spec.source} does not exist in ${namespace}; the copies are left as they are` });
    }
    const foreign: string[] = [];
    let copies = 0;
    for (const target of targets) {
      const current = this.configMaps.get(`${target}/${source.metadata.name}`);
      if (current && current.metadata.labels?.[fromName] !== name) {
        foreign.push(target);
        continue;
      }
      await applyIfChanged(this.ctx.client, types.configMaps, {
        apiVersion: 'v1', kind: 'ConfigMap',
        metadata: { name: source.metadata.name, namespace: target, labels: { [fromNamespace]: namespace, [fromName]: name } },
        data: source.data ?? {}, binaryData: source.binaryData ?? {},
      }, current);
      copies++;
    }
    await this.remove(this.copiesOf(replication).filter((c) => !targets.includes(c.metadata.namespace!)));
    await this.report(replication, copies, foreign.length
      ? { status: 'False', reason: 'NotOwned', message: `a ConfigMap ${source.metadata.name} that is not a copy ` +
        `already exists in ${foreign.join(', ')}; it is left alone` }
      : { status: 'True', reason: 'Replicated', message: `copied to ${copies} namespace${copies === 1 ? '' : 's'}` });
  }

  private async report(replication: ConfigMapReplicationResource & Owner, copies: number, outcome: Outcome): Promise<void> {
    const previous = replication.status?.conditions as Condition[] | undefined;
    const generation = replication.metadata.generation;
    const conditions = setCondition(previous, { type: 'Ready', observedGeneration: generation, ...outcome });
    const { written } = await writeStatus(this.ctx.client, replicationType, replication,
      { copies, observedGeneration: generation, conditions });
    const was = previous?.find((c) => c.type === 'Ready');
    if (written && (was?.reason !== outcome.reason || was?.message !== outcome.message)) {
      this.ctx.events.record(replication, outcome.status === 'True' ? 'Normal' : 'Warning', outcome.reason,
        outcome.message);
    }
  }
}

export const configMapReplicator: Operator = {
  name: 'configmapreplication',
  permissions,
  setup(ctx) {
    const replicator = new Replicator(ctx);
    ctx.addController({
      name: 'configmapreplication',
      for: replicationType,
      watches: [{ type: types.configMaps, map: (configMap) => replicator.concerned(configMap) }],
      reconcile: (request) => replicator.reconcile(request),
    });
  },
};
