// The TDSets that scale a workload they do not own (target.ts decides): the scale subresource read and patched, the
// replicas found first recorded before anything changes, and given back through a finalizer when the TDSet goes.
import type { Logger } from 'pino';
import { withFinalizer } from '../../runtime/finalizer.ts';
import { ApiError } from '../../runtime/rest.ts';
import type { Informer } from '../../runtime/informer.ts';
import type { OperatorContext } from '../../runtime/manager.ts';
import type { Owner } from '../../runtime/objects.ts';
import { kindType, type KubeObject, type ResourceType } from '../../runtime/resources.ts';
import type { Request } from '../../runtime/controller.ts';
import { timestamp, writeStatus, type Condition } from '../../runtime/status.ts';
import type { Desired } from './schedule.ts';
import { TDSet, type TDSetResource, type TDSetSpec, type TDSetStatus } from './schema.ts';
import type { ScaleResource } from './scale-resources.ts';
import { autoscaledPlan, autoscalerProblem, decide, restorePlan, sameTarget, scales, stretchOf, targetName, targetType,
  type Applied, type Autoscaler, type TargetRef } from './target.ts';

const tdsetType = kindType(TDSet);
export const autoscalerType: ResourceType = { group: 'autoscaling', version: 'v2', resource: 'horizontalpodautoscalers',
  kind: 'HorizontalPodAutoscaler', namespaced: true };
/** What is read of autoscalers: what they scale, between which bounds, and whose they are (metadata). */
export const autoscalerView = { keep: ['spec.scaleTargetRef', 'spec.minReplicas', 'spec.maxReplicas'] };

interface AutoscalerObject extends KubeObject {
  spec?: { scaleTargetRef?: Autoscaler['target']; minReplicas?: number; maxReplicas?: number };
}

const autoscalerOf = (o: AutoscalerObject): Autoscaler => {
  const owner = o.metadata.ownerReferences?.find((r) => r.controller);
  return { name: o.metadata.name, target: o.spec?.scaleTargetRef, minReplicas: o.spec?.minReplicas,
    maxReplicas: o.spec?.maxReplicas ?? 1, ...(owner ? { owner: `${owner.kind}/${owner.name}` } : {}) };
};
export const restoreFinalizer = 'keelson.dev/restore-replicas';
/**
 * Targets are not watched (the cache holds only Keelson's Deployments): each is read again this often, so status
 * says within that time when someone else changed its replicas, or when a target missing or taken is there to scale.
 */
const targetRetryMs = 30_000;

/** An answer that asking again will not change (a conflict or throttling will; a server error may). */
const refusedForGood = (error: unknown): boolean => error instanceof ApiError && error.status >= 400 &&
  error.status < 500 && ![409, 429].includes(error.status);

interface Scale extends KubeObject {
  spec?: { replicas?: number };
}

export interface TargetOutcome {
  ready: Omit<Condition, 'lastTransitionTime' | 'observedGeneration'>;
  status: Partial<TDSetStatus>;
  requeueAfterMs?: number;
  /** The TDSet as a status write on the way left it, to write the rest over. */
  updated?: TDSetResource & Owner;
}

type TDSet = TDSetResource & Owner;

export class TargetScaler {
  private readonly autoscalers;
  /** By TDSet uid: the change last refused for good, and until when it is not asked for again. */
  private readonly refusals = new Map<string, { attempt: string; until: number; message: string }>();

  /** `listed`: the custom resources the install lets TDSets scale. */
  constructor(private readonly ctx: OperatorContext, private readonly tdsets: Informer<TDSetResource>,
    private readonly listed: readonly ScaleResource[]) {
    this.autoscalers = ctx.cache.informer<AutoscalerObject>(autoscalerType, ctx.namespace, ctx.client, autoscalerView);
  }

  /** The TDSets an autoscaler concerns: those scaling what it scales, or naming it. */
  concerned(object: KubeObject): Request[] {
    const autoscaler = autoscalerOf(object as AutoscalerObject);
    return this.tdsets.listNamespace(object.metadata.namespace).filter((t) => t.spec?.scaleTargetRef &&
      (scales(autoscaler, t.spec.scaleTargetRef) || t.spec.horizontalPodAutoscaler?.name === autoscaler.name))
      .map((t) => ({ namespace: t.metadata.namespace, name: t.metadata.name }));
  }

  /** Scales the target as the schedule asks; undefined when only the finalizer was added (that write comes back). */
  async follow(tdset: TDSet, spec: TDSetSpec, desired: Desired, next: Date | undefined, log: Logger):
  Promise<TargetOutcome | undefined> {
    const ref = spec.scaleTargetRef!;
    const steps = { apply: () => this.scale(tdset, spec, ref, desired, next, log), cleanup: () => this.restore(tdset) };
    if (spec.restoreOnDelete ?? true) return (await withFinalizer(this.ctx.client, tdsetType, tdset, restoreFinalizer, steps)) ?? undefined;
    // restoreOnDelete turned off: the finalizer goes, and that write brings the TDSet back to be scaled.
    if (tdset.metadata.finalizers?.includes(restoreFinalizer)) return void await this.dropFinalizer(tdset);
    return steps.apply();
  }

  /** A TDSet being deleted: its target gets back its replicas, if the finalizer says so, and the TDSet goes. */
  async release(tdset: TDSet): Promise<void> {
    if (!tdset.metadata.finalizers?.includes(restoreFinalizer)) return;
    await this.restore(tdset);
    await this.dropFinalizer(tdset);
  }

  private async scale(tdset: TDSet, spec: TDSetSpec, ref: TargetRef, desired: Desired, next: Date | undefined,
    log: Logger): Promise<TargetOutcome> {
    const target = targetName(ref);
    const { originalReplicas, appliedReplicas, appliedWindow, originalMinReplicas, appliedMinReplicas, originalMaxReplicas,
      appliedMaxReplicas } = tdset.status ?? {};
    const previous: Applied = { originalReplicas, appliedReplicas, appliedWindow, originalMinReplicas, appliedMinReplicas,
      originalMaxReplicas, appliedMaxReplicas };
    const kept = { target, ...previous, lastScaleTime: tdset.status?.lastScaleTime,
      lastScaleReason: tdset.status?.lastScaleReason };
    const first = this.firstFor(tdset, ref);
    if (first) {
      return { requeueAfterMs: targetRetryMs, status: kept, ready: { type: 'Ready', status: 'False', reason: 'TargetTaken',
        message: `TDSet ${first} scales ${target} already; this one changes nothing while it does` } };
    }
    const type = targetType(ref, this.listed);
    if ('notScalable' in type) {
      return { status: kept, ready: { type: 'Ready', status: 'False', reason: 'TargetNotScalable', message: type.notScalable } };
    }
    const ns = tdset.metadata.namespace;
    const scale = await this.ctx.client.get<Scale>(type, ns, ref.name, 'scale');
    // A custom resource may be served without a scale subresource; every apps workload has one.
    if (!scale && type.group !== 'apps' && await this.ctx.client.get<KubeObject>(type, ns, ref.name)) {
      return { requeueAfterMs: targetRetryMs, status: kept, ready: { type: 'Ready', status: 'False',
        reason: 'TargetNotScalable', message: `${target} has no scale subresource: its CustomResourceDefinition ` +
          'declares none (spec.versions[].subresources.scale)' } };
    }
    if (!scale) {
      return { requeueAfterMs: targetRetryMs, status: kept, ready: { type: 'Ready', status: 'False', reason: 'TargetNotFound',
        message: `${target} does not exist in namespace ${ns}; looked for again every ${targetRetryMs / 1000}s` } };
    }
    const current = scale.spec?.replicas ?? 0;
    const stretch = stretchOf(desired, next);
    const autoscalers = this.autoscalers.listNamespace(ns).map(autoscalerOf);
    const problem = autoscalerProblem(ref, spec.horizontalPodAutoscaler?.name, autoscalers);
    if (problem) return { requeueAfterMs: targetRetryMs, status: kept, ready: { type: 'Ready', status: 'False', ...problem } };
    const autoscaler = autoscalers.find((a) => a.name === spec.horizontalPodAutoscaler?.name);
    if (autoscaler && !spec.paused) return this.autoscale(tdset, ref, type, desired, stretch, autoscaler, current, kept, log);
    const decision = decide(current, desired, stretch, previous, spec.paused);
    const why = desired.window === 'default' ? 'outside every window' : desired.window;
    switch (decision.kind) {
      case 'paused':
        // Unpaused, the schedule is applied afresh, whatever was set by hand meanwhile (as KEDA resumes).
        return { requeueAfterMs: targetRetryMs, status: { ...kept, appliedWindow: undefined }, ready: { type: 'Ready', status: 'True', reason: 'Paused',
          message: `spec.paused: ${target} is left at ${current}; the schedule asks for ${desired.replicas} (${why})` } };
      case 'changed-elsewhere':
        return { requeueAfterMs: targetRetryMs, status: kept, ready: { type: 'Ready', status: 'True', reason: 'ChangedElsewhere',
          message: `${target} has ${current} replicas, set by someone else since the TDSet set ` +
            `${previous.appliedReplicas}; it sets ${desired.replicas} again when the schedule next changes` } };
      case 'as-asked':
        return { requeueAfterMs: targetRetryMs, status: { ...kept, originalReplicas: previous.originalReplicas ?? current,
          appliedReplicas: current,
          appliedWindow: stretch }, ready: { type: 'Ready', status: 'True', reason: 'Scaled',
          message: `${target} has ${current} replicas, as the schedule asks (${why})` } };
      case 'scale': {
        const controller = await this.controllerOf(type, ref, ns);
        if (controller) return this.controlled(target, controller, kept);
        const attempt = `${stretch} ${decision.to}`;
        const lately = this.refusedLately(tdset, attempt);
        if (lately) return this.refusedOutcome(lately, kept);
        const { object: updated, error } = await this.changing(tdset, { target, originalReplicas: previous.originalReplicas ??
          current, appliedReplicas: decision.to, appliedWindow: stretch }, () => this.ctx.client.patch(type, ns, ref.name,
          { spec: { replicas: decision.to } }, 'merge', 'scale'));
        if (error) return this.refused(tdset, attempt, error, `the apiserver refused to scale ${target}`, kept, updated);
        this.ctx.events.record(tdset, 'Normal', 'Scaled', `Scaled ${target} from ${decision.from} to ${decision.to} ` +
          `replicas: ${why}`);
        log.info({ target, from: decision.from, to: decision.to, window: desired.window }, 'scaled');
        return { updated, requeueAfterMs: targetRetryMs, status: { target, originalReplicas: previous.originalReplicas ?? current,
          appliedReplicas: decision.to,
          appliedWindow: stretch, lastScaleTime: timestamp(new Date()), lastScaleReason: why },
        ready: { type: 'Ready', status: 'True', reason: 'Scaled',
          message: `${target} scaled from ${decision.from} to ${decision.to} replicas (${why})` } };
      }
    }
  }

  /** With an autoscaler on the target: its minReplicas follow the schedule, and the replicas are its own but at 0. */
  private async autoscale(tdset: TDSet, ref: TargetRef, type: ResourceType, desired: Desired, stretch: string,
    autoscaler: Autoscaler, current: number, kept: Partial<TDSetStatus>, log: Logger): Promise<TargetOutcome> {
    const target = targetName(ref);
    const ns = tdset.metadata.namespace;
    const plan = autoscaledPlan(desired, current, autoscaler, stretch, kept);
    const why = desired.window === 'default' ? 'outside every window' : desired.window;
    if (plan === 'changed-elsewhere') {
      return { requeueAfterMs: targetRetryMs, status: kept, ready: { type: 'Ready', status: 'True', reason: 'ChangedElsewhere',
        message: `someone else changed HorizontalPodAutoscaler ${autoscaler.name}'s bounds or ${target}'s replicas ` +
          'since the TDSet set them; it sets them again when the schedule next changes' } };
    }
    const originals = { originalReplicas: kept.originalReplicas ?? current,
      originalMinReplicas: kept.originalMinReplicas ?? autoscaler.minReplicas ?? 1 };
    const minReplicas = plan.minReplicas ?? autoscaler.minReplicas ?? 1;
    // The maxReplicas held, and those to give back, or neither (given back, or someone else's now).
    const bounds = { appliedMinReplicas: minReplicas, appliedMaxReplicas: plan.held?.maxReplicas,
      originalMaxReplicas: plan.held?.original };
    let updated: TDSet | undefined;
    const changes: string[] = [];
    const newBounds = { ...(plan.minReplicas !== undefined ? { minReplicas: plan.minReplicas } : {}),
      ...(plan.maxReplicas !== undefined ? { maxReplicas: plan.maxReplicas } : {}) };
    if (Object.keys(newBounds).length || plan.scaleTo !== undefined) {
      const controller = await this.controllerOf(type, ref, ns);
      if (controller) return this.controlled(target, controller, kept);
      const attempt = `${stretch} ${JSON.stringify(plan)}`;
      const lately = this.refusedLately(tdset, attempt);
      if (lately) return this.refusedOutcome(lately, kept);
      let object = tdset;
      // Each change has its own record, so that one refused after the other was made puts back only its own. Until
      // the bounds given back are set, the record still holds what to give back: a crash between loses nothing.
      const giving = plan.held === undefined && kept.appliedMaxReplicas !== undefined;
      const record = { target, ...originals, ...bounds, ...(giving ? { appliedMaxReplicas: kept.appliedMaxReplicas,
        originalMaxReplicas: kept.originalMaxReplicas } : {}), appliedWindow: stretch };
      if (Object.keys(newBounds).length) {
        // Both bounds in one write: the apiserver refuses a minReplicas above the maxReplicas at every step.
        const result = await this.changing(object, record, () =>
          this.ctx.client.patch(autoscalerType, ns, autoscaler.name, { spec: newBounds }, 'merge'));
        if (result.error) {
          return this.refused(tdset, attempt, result.error, `the apiserver refused to change HorizontalPodAutoscaler ` +
            `${autoscaler.name}`, kept, result.object);
        }
        object = result.object;
        changes.push(`set HorizontalPodAutoscaler ${autoscaler.name}'s ${[
          ...(newBounds.minReplicas !== undefined ? [`minReplicas from ${autoscaler.minReplicas ?? 1} to ${newBounds.minReplicas}`] : []),
          ...(newBounds.maxReplicas !== undefined ? [`maxReplicas from ${autoscaler.maxReplicas} to ${newBounds.maxReplicas}`] : []),
        ].join(' and ')}`);
      }
      if (plan.scaleTo !== undefined) {
        const result = await this.changing(object, { ...record, appliedReplicas: plan.scaleTo }, () =>
          this.ctx.client.patch(type, ns, ref.name, { spec: { replicas: plan.scaleTo } }, 'merge', 'scale'));
        if (result.error) {
          return this.refused(tdset, attempt, result.error, `${changes.length ? `${changes.join(', and ')}, but then ` : ''}` +
            `the apiserver refused to scale ${target}`, kept, result.object);
        }
        object = result.object;
        changes.push(`scaled ${target} from ${current} to ${plan.scaleTo}`);
      }
      updated = object;
      const note = `${changes.join(', and ')}: ${why}`;
      this.ctx.events.record(tdset, 'Normal', 'Scaled', note.charAt(0).toUpperCase() + note.slice(1));
      log.info({ target, autoscaler: autoscaler.name, ...plan, window: desired.window }, 'scaled');
    }
    return { updated, requeueAfterMs: targetRetryMs, status: { ...kept, ...originals, ...bounds,
      appliedReplicas: plan.scaleTo ?? current, appliedWindow: stretch,
      ...(changes.length ? { lastScaleTime: timestamp(new Date()), lastScaleReason: why } : {}) },
    ready: { type: 'Ready', status: 'True', reason: 'Autoscaled', message: desired.replicas === 0
      ? `${target} is at 0 replicas, where HorizontalPodAutoscaler ${autoscaler.name} stops (${why})`
      : `HorizontalPodAutoscaler ${autoscaler.name} keeps ${target} at ${minReplicas} replicas or more (${why})` } };
  }

  private controlled(target: string, controller: string, kept: Partial<TDSetStatus>): TargetOutcome {
    return { requeueAfterMs: targetRetryMs, status: kept, ready: { type: 'Ready', status: 'False', reason: 'TargetControlled',
      message: `${target} is controlled by ${controller}, which would undo any scale: name that instead` } };
  }

  /**
   * Makes a change with what it sets recorded first (and what to give back, the first time), so that neither a crash
   * nor a deletion between the two leaves the TDSet not knowing what it did; a change that fails puts the record back.
   * Resolves with the TDSet as the last write left it, to write the rest over, and the change's error if it failed.
   */
  private async changing(tdset: TDSet, record: Partial<TDSetStatus>, change: () => Promise<unknown>):
  Promise<{ object: TDSet; error?: unknown }> {
    const before = tdset.status ?? {};
    const { object } = await writeStatus(this.ctx.client, tdsetType, tdset, { ...before, ...record });
    try {
      await change();
    } catch (error) {
      const back = await writeStatus(this.ctx.client, tdsetType, object, before).then((r) => r.object, () => object);
      return { object: { ...tdset, ...back }, error };
    }
    return { object: { ...tdset, ...object } };
  }

  /** The refusal of this `attempt` less than targetRetryMs ago, if any: not asked again before then. */
  private refusedLately(tdset: TDSet, attempt: string): string | undefined {
    const last = this.refusals.get(tdset.metadata.uid ?? tdset.metadata.name);
    return last && last.attempt === attempt && Date.now() < last.until ? last.message : undefined;
  }

  /**
   * A change the apiserver refused for good (a value it will not take, the target gone): Ready=False, and the same
   * change not asked for again before targetRetryMs, as each attempt writes status, and each write is an event that
   * reconciles again. Anything else is thrown, to be retried with backoff.
   */
  private refused(tdset: TDSet, attempt: string, error: unknown, what: string, kept: Partial<TDSetStatus>,
    updated: TDSet): TargetOutcome {
    if (!refusedForGood(error)) throw error;
    const message = `${what}: ${(error as ApiError).message.slice(0, 300)}; tried again in ${targetRetryMs / 1000}s`;
    this.refusals.set(tdset.metadata.uid ?? tdset.metadata.name, { attempt, until: Date.now() + targetRetryMs, message });
    if (this.refusals.size > 10_000) this.refusals.delete(this.refusals.keys().next().value!);
    return { ...this.refusedOutcome(message, kept), updated };
  }

  private refusedOutcome(message: string, kept: Partial<TDSetStatus>): TargetOutcome {
    return { requeueAfterMs: targetRetryMs, status: kept, ready: { type: 'Ready', status: 'False', reason: 'ChangeRefused',
      message } };
  }

  /** What controls the target (a Deployment its ReplicaSet, a TDSet its Deployment), if anything does. */
  private async controllerOf(type: ResourceType, ref: TargetRef, namespace: string): Promise<string | undefined> {
    const workload = await this.ctx.client.get<KubeObject>(type, namespace, ref.name);
    const owner = workload?.metadata.ownerReferences?.find((r) => r.controller);
    return owner && `${owner.kind}/${owner.name}`;
  }

  /** The oldest other live TDSet in the namespace scaling the same workload, if one is older than this one. */
  private firstFor(tdset: TDSet, ref: TargetRef): string | undefined {
    const rank = (t: TDSetResource) => `${t.metadata.creationTimestamp ?? ''} ${t.metadata.name}`;
    return this.tdsets.listNamespace(tdset.metadata.namespace).filter((other) => !other.metadata.deletionTimestamp &&
      other.metadata.name !== tdset.metadata.name && other.spec?.scaleTargetRef !== undefined &&
      sameTarget(other.spec.scaleTargetRef, ref) && rank(other) < rank(tdset))
      .sort((a, b) => rank(a).localeCompare(rank(b)))[0]?.metadata.name;
  }

  /**
   * Gives back what the TDSet changed (restorePlan): the autoscaler's bounds, and the replicas, each on its own. What
   * the API refuses for good (the target gone or forbidden, a value no longer valid) is said in a Warning, and the
   * TDSet goes anyway: a finalizer must not hold it for ever.
   */
  private async restore(tdset: TDSet): Promise<void> {
    const ref = tdset.spec?.scaleTargetRef;
    if (!ref || this.firstFor(tdset, ref)) return;
    const ns = tdset.metadata.namespace;
    const failed = (message: string) => this.ctx.events.record(tdset, 'Warning', 'RestoreFailed',
      `${targetName(ref)} could not be given back what this TDSet changed: ${message.slice(0, 300)}`);
    const type = targetType(ref, this.listed);
    // Scaled while the install listed its kind, and no longer listed: its replicas may not be written now (its
    // autoscaler's bounds may).
    const scalable = !('notScalable' in type);
    if (!scalable && tdset.status?.originalReplicas !== undefined) await failed(type.notScalable);
    const named = tdset.spec?.horizontalPodAutoscaler?.name;
    const autoscaler = named === undefined ? undefined : this.autoscalers.listNamespace(ns).map(autoscalerOf)
      .find((a) => a.name === named);
    /** What `call` gives, or false (and a Warning) when the API refuses it for good. */
    const attempt = <T>(call: () => Promise<T>): Promise<T | false> => call().catch(async (error: unknown) => {
      if (!refusedForGood(error)) throw error;
      await failed((error as ApiError).message);
      return false as const;
    });
    const scale = scalable ? await attempt(() => this.ctx.client.get<Scale>(type, ns, ref.name, 'scale')) : undefined;
    if (scale === false) return;
    const { replicas, ...bounds } = restorePlan(scale ? scale.spec?.replicas ?? 0 : undefined, tdset.status ?? {}, autoscaler);
    if (Object.keys(bounds).length) {
      await attempt(async () => {
        await this.ctx.client.patch(autoscalerType, ns, autoscaler!.name, { spec: bounds }, 'merge');
        this.ctx.events.record(tdset, 'Normal', 'Restored', `Gave HorizontalPodAutoscaler ${autoscaler!.name} back ` +
          `the ${Object.entries(bounds).map(([field, value]) => `${field} ${value}`).join(' and ')} it had before this ` +
          'TDSet set them');
      });
    }
    if (replicas !== undefined && scalable) {
      await attempt(async () => {
        await this.ctx.client.patch(type, ns, ref.name, { spec: { replicas } }, 'merge', 'scale');
        this.ctx.events.record(tdset, 'Normal', 'Restored', `Gave ${targetName(ref)} back the ${replicas} ` +
          'replicas it had before this TDSet scaled it');
      });
    }
  }

  private async dropFinalizer(tdset: TDSet): Promise<void> {
    await this.ctx.client.patch(tdsetType, tdset.metadata.namespace, tdset.metadata.name, { metadata: {
      finalizers: (tdset.metadata.finalizers ?? []).filter((f) => f !== restoreFinalizer),
      resourceVersion: tdset.metadata.resourceVersion } }, 'merge');
  }
}
