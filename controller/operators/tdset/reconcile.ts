// TDSet: a Deployment (and optionally a Service) whose replicas follow the schedule, requeued exactly at the next
// window boundary. Objects of the same name it does not own are reported and left alone; an invalid spec is
// reported and changes nothing.
import { isDeepStrictEqual } from 'node:util';
import type { ControllerOptions } from '../../api/flags.ts';
import { apiVersionOfKind } from '../../api/kind.ts';
import { restrictedContainerSecurity, restrictedPodSecurity, smallContainerResources } from '../../api/pod-security.ts';
import type { ReconcileContext, ReconcileResult, Request } from '../../runtime/controller.ts';
import type { Operator, OperatorContext } from '../../runtime/manager.ts';
import { applyIfChanged, controllerReference, isControlledBy, type Owner } from '../../runtime/objects.ts';
import { readPrimary } from '../../runtime/primary.ts';
import { kindType, keyOf, types, type KubeObject, type ResourceType } from '../../runtime/resources.ts';
import { ApiError } from '../../runtime/rest.ts';
import { findCondition, setCondition, timestamp, writeStatus, type Condition } from '../../runtime/status.ts';
import { configuredPermissions, permissions } from './permissions.ts';
import { parseScaleResources } from './scale-resources.ts';
import { desiredAt, nextTransition, requeueDelay, scheduleOf, scheduleProblems, type Desired } from './schedule.ts';
import { TDSet, type TDSetResource, type TDSetSpec, type TDSetStatus } from './schema.ts';
import { autoscalerType, autoscalerView, TargetScaler } from './target-scaler.ts';
import { targetName } from './target.ts';
import { hardenedTemplate } from './template.ts';

interface Deployment extends KubeObject {
  spec?: { replicas?: number };
  status?: { observedGeneration?: number; replicas?: number; updatedReplicas?: number; availableReplicas?: number };
}

const tdsetType = kindType(TDSet);
/** The status fields that record what the TDSet did to a target. */
const targetRecordFields = ['target', 'originalReplicas', 'appliedReplicas', 'appliedWindow', 'originalMinReplicas',
  'appliedMinReplicas', 'originalMaxReplicas', 'appliedMaxReplicas', 'lastScaleTime', 'lastScaleReason'];
const managedBy = 'app.kubernetes.io/managed-by';
const ownedOrAbsent = (tdset: TDSetResource & Owner, object: KubeObject | undefined) => !object || isControlledBy(object, tdset);
/**
 * The cache holds only the Deployments and Services Keelson labelled, and of them what the reconcile compares: a
 * cluster's other workloads, however many, cost nothing. A Deployment the cache lacks is created, never applied
 * over: a stranger's of the name refuses the create and is then read, as one of ours stripped of its label is, so
 * neither is overwritten unseen.
 */
const deploymentView = { labelSelector: `${managedBy}=keelson`,
  keep: ['spec', 'status.observedGeneration', 'status.replicas', 'status.updatedReplicas', 'status.availableReplicas'] };
const serviceView = { labelSelector: `${managedBy}=keelson`, keep: ['spec'] };

export function labelsFor(name: string): Record<string, string> {
  return { 'app.kubernetes.io/name': name, 'app.kubernetes.io/instance': name, [managedBy]: 'keelson' };
}

export function deploymentFor(tdset: TDSetResource & Owner, spec: TDSetSpec, replicas: number): Deployment {
  const labels = labelsFor(tdset.metadata.name);
  const selector = { 'app.kubernetes.io/name': labels['app.kubernetes.io/name']!,
    'app.kubernetes.io/instance': labels['app.kubernetes.io/instance']! };
  return {
    apiVersion: 'apps/v1', kind: 'Deployment',
    metadata: { name: tdset.metadata.name, namespace: tdset.metadata.namespace, labels,
      ownerReferences: [controllerReference(tdset)] },
    spec: {
      replicas,
      selector: { matchLabels: selector },
      template: spec.template ? hardenedTemplate(spec.template, labels) : {
        metadata: { labels },
        spec: { securityContext: { ...restrictedPodSecurity,
          ...spec.container!.runAsUser ? { runAsUser: spec.container!.runAsUser } : {},
          ...spec.container!.runAsGroup ? { runAsGroup: spec.container!.runAsGroup } : {} },
        containers: [{ name: 'app', image: spec.container!.image,
          ports: [{ name: 'http', containerPort: spec.container!.port, protocol: 'TCP' }],
          securityContext: restrictedContainerSecurity, resources: spec.container!.resources ?? smallContainerResources }] },
      },
    } as Deployment['spec'],
  };
}

export function serviceFor(tdset: TDSetResource & Owner, port: number): KubeObject {
  const labels = labelsFor(tdset.metadata.name);
  return {
    apiVersion: 'v1', kind: 'Service',
    metadata: { name: tdset.metadata.name, namespace: tdset.metadata.namespace, labels,
      ownerReferences: [controllerReference(tdset)] },
    spec: { selector: { 'app.kubernetes.io/name': tdset.metadata.name, 'app.kubernetes.io/instance': tdset.metadata.name },
      ports: [{ name: 'http', port, targetPort: 'http', protocol: 'TCP' }] },
  };
}

type Outcome = { ready: Omit<Condition, 'lastTransitionTime'>; progressing?: Omit<Condition, 'lastTransitionTime'> };

class TDSetReconciler {
  private readonly tdsets;
  private readonly deployments;
  private readonly services;

  private readonly targets;

  constructor(private readonly ctx: OperatorContext<ControllerOptions>) {
    this.tdsets = ctx.cache.informer<TDSetResource>(tdsetType, ctx.namespace, ctx.client);
    this.targets = new TargetScaler(ctx, this.tdsets, parseScaleResources(ctx.settings.tdsetScaleResources));
    this.deployments = ctx.cache.informer<Deployment>(types.deployments, ctx.namespace, ctx.client, deploymentView);
    this.services = ctx.cache.informer<KubeObject>(types.services, ctx.namespace, ctx.client, serviceView);
  }

  async reconcile(request: Request, { log }: ReconcileContext, now = new Date()): Promise<ReconcileResult> {
    const going = this.tdsets.get(keyOf(request));
    if (going?.metadata.deletionTimestamp) {
      return this.targets.release({ ...going, apiVersion: apiVersionOfKind(TDSet), kind: TDSet.kind } as TDSetResource & Owner);
    }
    const primary = readPrimary(this.tdsets, request, TDSet);
    if (!primary) return;
    const { object: tdset, spec } = primary;
    const generation = tdset.metadata.generation;
    const schedule = scheduleOf(spec);
    const problems = [...primary.problems, ...scheduleProblems(schedule),
      ...(spec.template && !(spec.template as { spec?: { containers?: unknown[] } }).spec?.containers?.length
        ? ['spec.template.spec.containers: a pod template needs a container'] : [])];
    if (problems.length) {
      await this.report(tdset, { ready: { type: 'Ready', status: 'False', reason: 'InvalidSpec', observedGeneration: generation,
        message: `${problems.join('; ')}; nothing was changed` } }, {});
      return;
    }

    const desired = desiredAt(schedule, now);
    const next = nextTransition(schedule, now);
    const scheduled = { target: targetName(spec.scaleTargetRef ?? { kind: 'Deployment', name: tdset.metadata.name }),
      desiredReplicas: desired.replicas, activeWindow: desired.window,
      ...(next ? { nextTransitionTime: timestamp(next) } : {}) };
    if (spec.scaleTargetRef) {
      const outcome = await this.targets.follow(tdset, spec, desired, next, log);
      if (outcome) await this.report(outcome.updated ?? tdset, { ready: { ...outcome.ready, observedGeneration: generation } },
        { ...scheduled, ...outcome.status });
      return outcome ? this.requeue(spec, next, now, outcome.requeueAfterMs) : undefined;
    }

    const name = tdset.metadata.name;
    // The cache holds only what Keelson labelled. A Deployment of the name that is someone else's is learnt from the
    // create the apiserver refuses, not from a read per new TDSet: a burst of new TDSets reads nothing. A paused
    // TDSet creates nothing, so it reads; so does one with a Service, which is not made before the Deployment is.
    const read = <T extends KubeObject>(type: ResourceType) => this.ctx.client.get<T>(type, request.namespace, name);
    const current = this.deployments.get(keyOf(request)) ?? (spec.paused ? await read<Deployment>(types.deployments) : undefined);
    const service = this.services.get(keyOf(request)) ?? (spec.service ? await read(types.services) : undefined);
    const notOwned = (deployment: KubeObject | undefined) => this.notOwned(tdset,
      { Deployment: deployment, Service: spec.service ? service : undefined }, scheduled).then(() => this.requeue(spec, next, now));
    if (!ownedOrAbsent(tdset, current)) return notOwned(current);
    if (spec.service && !ownedOrAbsent(tdset, service)) return notOwned(current ?? await read(types.deployments));

    if (spec.paused) {
      const paused = { type: 'Progressing', status: 'False', reason: 'Paused', observedGeneration: generation,
        message: `spec.paused: nothing is scaled; the schedule asks for ${desired.replicas} (${desired.window})` } as const;
      await this.report(tdset, current ? { ...this.rollout(current, { replicas: current.spec?.replicas ?? 0, window: '' },
        generation), progressing: paused } : { ready: { ...paused, type: 'Ready' }, progressing: paused }, scheduled);
      return this.requeue(spec, next, now);
    }
    const wanted = deploymentFor(tdset, spec, desired.replicas);
    let before = current;
    let applied = await this.createOrApply(types.deployments, wanted, current);
    if ('refused' in applied) {
      // Admission (a quota, a webhook) may refuse a create before the store says the name is taken: whose is it?
      const { refused } = applied;
      before = await read<Deployment>(types.deployments).catch(() => { throw refused; });
      if (!ownedOrAbsent(tdset, before)) return notOwned(before);
      // Nothing of the name: the refusal stands, unless the name was taken since (by an earlier pass of ours).
      if (!before) {
        if (refused.status === 409) return { requeueAfterMs: 1_000 };
        throw refused;
      }
      // Ours but not in the cache: its label stripped, or made by an earlier pass the cache has not shown yet.
      applied = await applyIfChanged(this.ctx.client, types.deployments, wanted, before);
    }
    const { object: deployment, changed } = applied;
    if (changed) await this.announce(tdset, before, desired, log);
    if (spec.service) {
      const made = await this.createOrApply(types.services, serviceFor(tdset, spec.service.port), service);
      if ('refused' in made) {
        // Made by someone else since the read: the next pass reads it and reports it not owned.
        if (made.refused.status === 409) return { requeueAfterMs: 1_000 };
        throw made.refused;
      }
    } else if (service && isControlledBy(service, tdset)) {
      await this.ctx.client.delete(types.services, service.metadata.namespace, name, service.metadata.uid);
    }

    await this.report(tdset, this.rollout(deployment, desired, generation), scheduled);
    return this.requeue(spec, next, now);
  }

  /** Says which of `objects` of the TDSet's name are someone else's; it changes nothing of them. */
  private async notOwned(tdset: TDSetResource & Owner, objects: Record<'Deployment' | 'Service', KubeObject | undefined>,
    scheduled: Partial<TDSetStatus>): Promise<void> {
    const foreign = Object.entries(objects).filter(([, object]) => !ownedOrAbsent(tdset, object))
      .map(([kind]) => `${kind} ${tdset.metadata.name}`);
    await this.report(tdset, { ready: { type: 'Ready', status: 'False', reason: 'NotOwned',
      observedGeneration: tdset.metadata.generation,
      message: `${foreign.join(' and ')} already exist${foreign.length > 1 ? '' : 's'} and ${foreign.length > 1 ? 'are' : 'is'} ` +
        'not owned by this TDSet; it changes nothing until they are removed or renamed' } }, scheduled);
  }

  /**
   * Applies `desired` over `current`, ours; with no current object, creates it, so that one of its name the cache
   * does not show is never taken over by a forced apply. The apiserver's refusal of the create, if it refused.
   */
  private async createOrApply<T extends KubeObject>(type: ResourceType, desired: T, current: T | undefined):
  Promise<{ object: T; changed: boolean } | { refused: ApiError }> {
    if (current) return applyIfChanged(this.ctx.client, type, desired, current);
    try {
      return { object: await this.ctx.client.create(type, desired), changed: true };
    } catch (error) {
      if (error instanceof ApiError) return { refused: error };
      throw error;
    }
  }

  private async announce(tdset: TDSetResource & Owner, before: Deployment | undefined, desired: Desired,
    log: ReconcileContext['log']): Promise<void> {
    const from = before?.spec?.replicas;
    const why = desired.window === 'default' ? 'outside every window' : `window ${desired.window}`;
    if (from === undefined) {
      this.ctx.events.record(tdset, 'Normal', 'Created', `Created Deployment ${tdset.metadata.name} with ` +
        `${desired.replicas} replicas: ${why}`);
    } else if (from !== desired.replicas) {
      this.ctx.events.record(tdset, 'Normal', 'Scaled', `Scaled from ${from} to ${desired.replicas} replicas: ${why}`);
      log.info({ from, to: desired.replicas, window: desired.window }, 'scaled');
    }
  }

  private rollout(deployment: Deployment, desired: Desired, generation: number): Outcome {
    const status = deployment.status ?? {};
    const observed = (status.observedGeneration ?? 0) >= (deployment.metadata.generation ?? 0);
    const available = status.availableReplicas ?? 0;
    const updated = status.updatedReplicas ?? 0;
    const done = observed && updated >= desired.replicas && available >= desired.replicas &&
      (status.replicas ?? 0) === desired.replicas;
    const base = { observedGeneration: generation };
    return {
      ready: available >= desired.replicas && observed
        ? { ...base, type: 'Ready', status: 'True', reason: 'Available',
          message: `${available} of ${desired.replicas} replicas available` }
        : { ...base, type: 'Ready', status: 'False', reason: 'Unavailable',
          message: `${available} of ${desired.replicas} replicas available` },
      progressing: done
        ? { ...base, type: 'Progressing', status: 'False', reason: 'Complete', message: 'the Deployment matches the schedule' }
        : { ...base, type: 'Progressing', status: 'True', reason: 'RollingOut',
          message: `${updated} of ${desired.replicas} replicas updated` },
    };
  }

  private async report(tdset: TDSetResource, outcome: Outcome, scheduled: Partial<TDSetStatus>): Promise<void> {
    const previous = tdset.status ?? {};
    let conditions = setCondition(previous.conditions as Condition[] | undefined, outcome.ready);
    if (outcome.progressing) conditions = setCondition(conditions, outcome.progressing);
    // What was recorded of a target (what to give back above all) stays whatever this pass reports.
    const recorded = Object.fromEntries(Object.entries(previous).filter(([field]) => targetRecordFields.includes(field)));
    const status = { ...recorded, ...scheduled, observedGeneration: tdset.metadata.generation, conditions };
    const wasReady = findCondition(previous.conditions as Condition[] | undefined, 'Ready');
    const becameInvalid = outcome.ready.status === 'False' && !['Unavailable', 'Paused'].includes(outcome.ready.reason) &&
      (wasReady?.reason !== outcome.ready.reason || wasReady?.message !== outcome.ready.message);
    if ((await writeStatus(this.ctx.client, tdsetType, tdset, status)).written && becameInvalid) {
      this.ctx.events.record(tdset as TDSetResource & Owner, 'Warning', outcome.ready.reason, outcome.ready.message);
    }
  }

  autoscalerConcerns(object: KubeObject): Request[] {
    return this.targets.concerned(object);
  }

  private requeue(spec: TDSetSpec, next: Date | undefined, now: Date, sooner = Infinity): ReconcileResult {
    const delay = Math.min(requeueDelay(next, spec.intervalMint, now) ?? Infinity, sooner);
    return Number.isFinite(delay) ? { requeueAfterMs: delay } : undefined;
  }
}

export const tdsetOperator: Operator<ControllerOptions> = {
  name: 'tdset',
  permissions,
  configuredPermissions,
  setup(ctx) {
    const reconciler = new TDSetReconciler(ctx);
    ctx.addController({
      name: 'tdset',
      for: tdsetType,
      owns: [{ type: types.deployments, view: deploymentView }, { type: types.services, view: serviceView }],
      // An autoscaler's spec or owner changed: the TDSets on the workload it scales (not its status, every 15 s).
      watches: [{ type: autoscalerType, view: autoscalerView, map: (o) => reconciler.autoscalerConcerns(o),
        updateMatters: (old, updated) => !isDeepStrictEqual([old.spec, old.metadata.ownerReferences],
          [updated.spec, updated.metadata.ownerReferences]) }],
      workers: 2,
      reconcile: (request, context) => reconciler.reconcile(request, context),
    });
  },
};
