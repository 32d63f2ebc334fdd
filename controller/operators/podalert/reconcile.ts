// PodAlert: evaluates the matching pods on every change and every 30 seconds; a pod unhealthy past the grace period
// is an alert with its containers' state and the failing container's log tail. New and resolved alerts become
// Events and, with a webhook, messages kept in status until delivered. A ClusterPodAlert is the same over the pods of
// every namespace its namespaceSelector picks, each alert carrying its namespace.
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { Gauge } from 'prom-client';
import { keelsonFlags, parseBoolean, type ControllerOptions } from '../../api/flags.ts';
import type { KindDefinition, Resource as KindResource } from '../../api/kind.ts';
import type { Permission } from '../../api/permissions.ts';
import type { ReconcileContext, ReconcileResult, Request } from '../../runtime/controller.ts';
import type { Operator, OperatorContext } from '../../runtime/manager.ts';
import type { Pod } from '../../runtime/core.ts';
import type { Owner } from '../../runtime/objects.ts';
import { readPrimary } from '../../runtime/primary.ts';
import { ApiError } from '../../runtime/rest.ts';
import { kindType, keyOf, types, type KubeObject } from '../../runtime/resources.ts';
import { primariesSelecting } from '../../runtime/mappers.ts';
import { matches, type LabelSelector } from '../../runtime/selectors.ts';
import { setCondition, timestamp, writeStatus, type Condition } from '../../runtime/status.ts';
import { clip, fitToBudget, jsonBytes, logShareBytes, maxListedAlerts } from './budget.ts';
import { maxPendingResolutions, maxPostedAlerts, postable, resolution, workloadSubject, type SourceLabel,
  type Subject } from './alertmanager.ts';
import { AlertmanagerSender, labelKey } from './alertmanager-delivery.ts';
import { groupByWorkload, maxListedWorkloads, sameAlert, workloadResolvedText, workloadText, type AlertIdentity,
  type UnhealthyPod, type WorkloadAlert } from './groups.ts';
import { alertText, failedLately, isKubeletLogFailure, podViewFields, trouble, type Trouble } from './health.ts';
import { cronJobOf, workloadName, workloadOf } from './owner.ts';
import { UnhealthyPodSeries } from './pod-series.ts';
import { permissions } from './permissions.ts';
import { PodAlert, type PodAlertSpec, type PodAlertStatus } from './schema.ts';
import { deliver } from './delivery.ts';
import { parseDestinations, type DestinationPolicy } from './destination.ts';
import { droppedText, durationMs, queueNotifications, retryDelayMs, type Notification } from './webhook.ts';

type Alert = NonNullable<PodAlertStatus['alerts']>[number];
/** A PodAlert's spec, or a ClusterPodAlert's, which picks namespaces too. */
export type AlertSpec = PodAlertSpec & { namespaceSelector?: LabelSelector };
type PodAlertResource = KindResource<AlertSpec, PodAlertStatus>;
type Resource = PodAlertResource & Owner;

/** What tells a ClusterPodAlert from a PodAlert here: its kind, and the operator, label and metrics named for it. */
export interface AlertKind {
  name: SourceLabel;
  definition: KindDefinition<AlertSpec, PodAlertStatus>;
  permissions: readonly Permission[];
}

/** Whether a ClusterPodAlert picks the namespace: one without a namespaceSelector (none is admitted) picks none. */
const picks = (spec: AlertSpec, namespace: KubeObject) =>
  spec.namespaceSelector !== undefined && matches(spec.namespaceSelector, namespace.metadata.labels);

/** Every pod, since a PodAlert may select any; of each, what its health is judged on. */
const podView = { keep: podViewFields };
/** Of Jobs and Namespaces, metadata only: who owns a Job (the CronJob its pods belong to), a namespace's labels. */
const metadataView = { keep: [] };
export const evaluationPeriodMs = 30_000;

class PodAlertReconciler {
  private readonly podAlertType;
  readonly clusterScoped: boolean;
  private readonly podAlerts;
  private readonly pods;
  private readonly jobs;
  /** A ClusterPodAlert's: every namespace, its labels kept (metadata). */
  private readonly namespaces;
  private readonly unhealthy: Gauge;
  private readonly podSeries: UnhealthyPodSeries;
  private readonly destinations: DestinationPolicy;
  /** Whether the install lets log tails be copied at all (--podalert-log-tails). */
  private readonly logTails: boolean;
  private readonly alertmanager: AlertmanagerSender;
  /** By PodAlert uid, owner and pod: when a pod last had the reason its alert carries (memory is enough: a restart
   * only holds a reason a little longer). */
  private readonly reasonSeen = new Map<string, number>();
  /** When each PodAlert (uid/generation) last had its webhook Secret read with nothing to send. */
  private readonly secretChecked = new Map<string, number>();

  constructor(private readonly ctx: OperatorContext<ControllerOptions>, private readonly kind: AlertKind) {
    this.podAlertType = kindType(kind.definition);
    this.clusterScoped = !this.podAlertType.namespaced;
    this.destinations = parseDestinations(ctx.settings.webhookAllowedDestinations,
      ctx.settings.webhookRefusedDestinations);
    const logTails = ctx.settings.podAlertLogTails;
    this.logTails = logTails === undefined || parseBoolean(keelsonFlags.podAlertLogTails.flag, logTails);
    this.podAlerts = ctx.cache.informer<PodAlertResource>(this.podAlertType, this.clusterScoped ? undefined : ctx.namespace,
      ctx.client);
    this.namespaces = this.clusterScoped ? ctx.cache.informer<KubeObject>(types.namespaces, undefined, ctx.client,
      metadataView) : undefined;
    this.pods = ctx.cache.informer<Pod>(types.pods, ctx.namespace, ctx.client, podView);
    this.jobs = ctx.cache.informer<KubeObject>(types.jobs, ctx.namespace, ctx.client, metadataView);
    this.unhealthy = new Gauge({ name: `keelson_${kind.name}_unhealthy_pods`, registers: [ctx.metrics.registry],
      help: `Pods counted unhealthy (past the grace period, or crash-looping within it while their alert fires), per ${kind.definition.kind}`,
      labelNames: this.clusterScoped ? ['name'] : ['namespace', 'name'] });
    this.podSeries = new UnhealthyPodSeries(ctx.metrics.registry, kind.name);
    this.alertmanager = new AlertmanagerSender(ctx, this.destinations);
  }

  /** The PodAlerts in the pod's namespace that watch it; or the ClusterPodAlerts that pick its namespace and it. */
  podAlertsFor(pod: KubeObject): Request[] {
    if (!this.clusterScoped) return primariesSelecting(this.podAlerts, pod, (a) => a.spec.selector ?? {});
    // A pod of a namespace not cached yet concerns none now: the namespace's own event reconciles every one.
    const namespace = this.namespaces!.get(pod.metadata.namespace!);
    return this.podAlerts.list().filter((a) => namespace && picks(a.spec, namespace) &&
      matches(a.spec.selector ?? {}, pod.metadata.labels)).map((a) => ({ name: a.metadata.name }));
  }

  /** Every ClusterPodAlert: a namespace's labels changed, which may pick it or no longer. */
  allPodAlerts(): Request[] {
    return this.podAlerts.list().map((a) => ({ name: a.metadata.name }));
  }

  /** The namespaces whose pods `podAlert` may pick by its selector: its own, or those its namespaceSelector picks. */
  private namespacesOf(podAlert: Resource, spec: AlertSpec): string[] {
    if (!this.clusterScoped) return [podAlert.metadata.namespace];
    return this.namespaces!.list().filter((n) => picks(spec, n)).map((n) => n.metadata.name);
  }

  /** The labels of its metrics: name, and namespace for a PodAlert. */
  private metricLabels(request: Request): Record<string, string> {
    return this.clusterScoped ? { name: request.name } : { namespace: request.namespace!, name: request.name };
  }

  async reconcile(request: Request, { log }: ReconcileContext, now = new Date()): Promise<ReconcileResult> {
    const primary = readPrimary(this.podAlerts, request, this.kind.definition);
    if (!primary) {
      this.unhealthy.remove(this.metricLabels(request));
      this.podSeries.remove(request);
      return;
    }
    const { object: podAlert, spec, problems } = primary;
    const generation = podAlert.metadata.generation;
    const previous = podAlert.status ?? {};
    if (problems.length) {
      this.unhealthy.remove(this.metricLabels(request));
      this.podSeries.remove(request);
      await this.write(podAlert, { ...previous, observedGeneration: generation, conditions: setCondition(
        previous.conditions as Condition[] | undefined, { type: 'Ready', status: 'False', reason: 'InvalidSpec',
          observedGeneration: generation, message: problems.join('; ') }) }, now);
      return;
    }

    const previousAlerts = previous.alerts ?? [];
    const previousWorkloads = previous.workloads ?? [];
    const namespaces = this.namespacesOf(podAlert, spec);
    const { alerts, unhealthy, found, nextCrossing } = await this.evaluate(spec, namespaces, previousAlerts, now,
      (identity) => previousWorkloads.some((p) => sameAlert(p, identity)));
    const seenKey = (w: AlertIdentity) => `${podAlert.metadata.uid} ${w.namespace ?? ''} ${w.owner} ${w.pod ?? ''}`;
    const workloads = groupByWorkload(found, previousWorkloads, { perPod: spec.groupBy === 'pod', now: now.getTime(),
      lastSeen: (w) => this.reasonSeen.get(seenKey(w)) });
    this.noteReasonsSeen(workloads, found, seenKey, now);
    const listed = workloads.slice(0, maxListedWorkloads);
    // An alert is new when it is not listed yet and either nothing was left unlisted last time (or the spec changed),
    // or it crossed its grace period since then (timestamps have whole seconds): one pushed out of a full list and
    // back is not new, nor one a status written before alerts were grouped listed per pod. One is resolved only when
    // none of its pods is unhealthy, listed or not.
    const lastEvaluated = previous.lastEvaluationTime ? Date.parse(previous.lastEvaluationTime) : -Infinity;
    const crossedSince = (since: string) => Date.parse(since) + spec.gracePeriodSeconds * 1000 + 1000 > lastEvaluated;
    const noneUnlisted = (previous.workloads !== undefined || !previousAlerts.length) &&
      (previous.unhealthyWorkloads ?? 0) <= previousWorkloads.length || previous.observedGeneration !== generation;
    const fresh = listed.filter((w) => !previousWorkloads.some((p) => sameAlert(p, w)) && (noneUnlisted || crossedSince(w.since)));
    const resolved = previousWorkloads.filter((p) => !workloads.some((w) => sameAlert(w, p)));
    // With a repeatInterval, an alert still firing that long after it was last sent is sent again.
    const repeatMs = spec.webhook?.repeatInterval ? durationMs(spec.webhook.repeatInterval) : undefined;
    const lastSent = (w: WorkloadAlert) => previousWorkloads.find((p) => sameAlert(p, w))?.notifiedAt;
    // Not while a message about it still waits: a webhook that is down would fill the outbox with repeats.
    const waiting = (w: WorkloadAlert) => (previous.pendingNotifications ?? []).some((n) => n.owner === w.owner &&
      n.namespace === w.namespace && n.pod === (w.pod ?? (w.owner.startsWith('Pod/') ? w.owner.slice(4) : undefined)));
    const repeats = repeatMs === undefined ? [] : listed.filter((w) => !fresh.includes(w) && lastSent(w) !== undefined &&
      Date.parse(lastSent(w)!) + repeatMs <= now.getTime() && !waiting(w));
    const stamped = listed.map((w) => repeatMs === undefined ? w
      : { ...w, notifiedAt: fresh.includes(w) || repeats.includes(w) ? timestamp(now) : lastSent(w) ?? timestamp(now) });
    // One held back by a waiting message is due again when that message is sent, which reconciles anyway.
    const nextRepeat = Math.min(...stamped.filter((w) => !waiting(w)).map((w) => w.notifiedAt
      ? Date.parse(w.notifiedAt) + repeatMs! - now.getTime() : Infinity));
    const notifications: Notification[] = [...fresh.map((w) => ({ event: 'alert' as const, ...this.message(podAlert, w, alerts) })),
      ...resolved.map((w) => ({ event: 'resolved' as const, ...this.message(podAlert, w, previousAlerts, true) })),
      ...repeats.map((w) => ({ event: 'repeat' as const, ...this.message(podAlert, w, alerts) }))];
    const incoming = notifications.map((n) => ({ id: randomUUID(), ...n }));
    const { outbox, dropped } = spec.webhook ? queueNotifications(previous.pendingNotifications ?? [], incoming)
      : { outbox: [], dropped: 0 };
    if (dropped) {
      this.ctx.events.record(podAlert, 'Warning', 'NotificationsDropped', droppedText(dropped));
    }
    const checking = spec.alerts.checkRunningPods;
    const count = `${unhealthy.size} unhealthy pod${unhealthy.size === 1 ? '' : 's'}` + (!this.clusterScoped ? ''
      : ` in the ${namespaces.length} namespace${namespaces.length === 1 ? '' : 's'} namespaceSelector picks`);
    let conditions = setCondition(previous.conditions as Condition[] | undefined, { type: 'Ready', status: 'True',
      observedGeneration: generation, reason: checking ? 'Evaluated' : 'CheckDisabled',
      message: !checking ? 'spec.alerts.checkRunningPods is false'
        : unhealthy.size > alerts.length ? `${count}; the ${alerts.length} most recent are listed` : count });
    if (!spec.webhook) conditions = conditions.filter((c) => c.type !== 'WebhookDelivered');
    if (dropped) {
      conditions = setCondition(conditions, { type: 'WebhookDelivered', status: 'False', reason: 'OutboxOverflow',
        observedGeneration: generation, message: droppedText(dropped) });
    }
    if (!spec.alertmanager) {
      conditions = conditions.filter((c) => c.type !== 'AlertmanagerDelivered');
      this.alertmanager.forget(podAlert.metadata.uid ?? keyOf(request));
    }
    // Resolutions are in status before they are posted, as webhook messages are.
    const source = { label: this.kind.name, namespace: podAlert.metadata.namespace, name: podAlert.metadata.name, spec };
    // An alert whose reason or container moved on is another alert to Alertmanager: the one it was ends.
    const relabelled = previousWorkloads.filter((p) => workloads.some((w) => sameAlert(w, p) &&
      (w.reason !== p.reason || w.container !== p.container)));
    const ended = (w: WorkloadAlert, summary: string) => resolution(postable(source, { ...this.subject(podAlert, w,
      previousAlerts, true), summary }, now, timestamp(now)));
    const resolutions = spec.alertmanager ? [...previous.alertmanagerResolutions ?? [],
      ...resolved.map((w) => ended(w, this.message(podAlert, w, previousAlerts, true).text)),
      ...relabelled.map((w) => ended(w, `${w.owner}${w.namespace ? ` in ${w.namespace}` : ''} is unhealthy still, now as ` +
        workloads.find((c) => sameAlert(c, w))!.reason))]
      .slice(-maxPendingResolutions) : undefined;
    const status: Partial<PodAlertStatus> = { ...previous, observedGeneration: generation, alerts,
      unhealthyPods: unhealthy.size, pendingNotifications: outbox, conditions, workloads: stamped,
      unhealthyWorkloads: workloads.length, alertmanagerResolutions: resolutions,
      ...(dropped ? { droppedNotifications: (previous.droppedNotifications ?? 0) + dropped } : {}) };
    status.alerts = fitToBudget(alerts, (fitted) => jsonBytes({ ...status, alerts: fitted }));
    // The messages are in status before any is sent: a restart then neither loses nor repeats one.
    let { written, object } = await this.write(podAlert, status, now);
    this.unhealthy.set(this.metricLabels(request), unhealthy.size);
    this.podSeries.set(request, found);
    // Events follow the status they tell of: a write that fails (a conflict) records none, and its retry records once.
    for (const n of incoming.filter((m) => m.event !== 'repeat')) {
      this.ctx.events.record(podAlert, n.event === 'alert' ? 'Warning' : 'Normal',
        n.event === 'alert' ? 'Unhealthy' : 'Resolved', n.text);
    }
    if (incoming.length) {
      const subjects = (event: string) => incoming.filter((n) => n.event === event).map((n) => n.owner ?? n.pod);
      log.info({ new: subjects('alert'), resolved: subjects('resolved') }, 'alerts changed');
    }

    let retryMs = Infinity;
    if (spec.alertmanager) {
      // Every alert, listed in status or not: one Alertmanager stops hearing of would end there while it fires.
      const firing = workloads.slice(0, maxPostedAlerts).map((w) => postable(source, this.subject(podAlert, w,
        status.alerts ?? []), now));
      const sent = await this.alertmanager.send(podAlert.metadata.uid ?? keyOf(request), podAlert.metadata.namespace,
        spec.alertmanager, firing, resolutions ?? [], now);
      retryMs = 'wait' in sent ? sent.wait : sent.nextMs;
      if (!('wait' in sent)) {
        const posted = new Set(sent.delivered.map((r) => `${labelKey(r.labels)} ${r.endsAt}`));
        ({ object } = await this.write(object, { ...object.status, alertmanagerResolutions:
          (object.status?.alertmanagerResolutions ?? []).filter((r) => !posted.has(`${labelKey(r.labels)} ${r.endsAt}`)),
        conditions: setCondition(object.status?.conditions as Condition[] | undefined,
          { ...sent.condition, observedGeneration: generation }) }, now));
      }
    }
    const due = outbox[0]?.notBefore ? Date.parse(outbox[0].notBefore) - now.getTime() : 0;
    if (due > 0) retryMs = Math.min(retryMs, due);
    else if (spec.webhook && (outbox.length || this.secretCheckDue(podAlert, generation, now))) {
      // Send only from the latest object: the cache may not show our last write yet, and an outbox read from it
      // would send again. A patch on resourceVersion alone fails with 409 (and a retry) when the cache was stale.
      if (!written && outbox.length) {
        object = await this.ctx.client.patch<Resource>(this.podAlertType, object.metadata.namespace, object.metadata.name,
          { metadata: { resourceVersion: object.metadata.resourceVersion } }, 'merge', 'status');
      }
      const delivery = await deliver(this.ctx, this.destinations, object, { ...spec, webhook: spec.webhook }, outbox, dropped,
        async (latest, pending, condition) => (await this.write(latest, { ...latest.status, pendingNotifications: pending,
          ...(condition ? { conditions: setCondition(latest.status?.conditions as Condition[] | undefined,
            { ...condition, observedGeneration: generation }) } : {}) }, now)).object);
      if (delivery.outbox.length) retryMs = Math.min(retryMs, retryDelayMs(delivery.outbox[0]!.attempts ?? 1));
    }
    return { requeueAfterMs: Math.min(evaluationPeriodMs, nextCrossing - now.getTime() + 50, retryMs, nextRepeat + 50) };
  }

  /**
   * With nothing to send, the webhook Secret is still read, so that a missing one shows at once: on a new spec, and
   * then once an evaluation period, not on every change of a pod in the namespace.
   */
  private secretCheckDue(podAlert: Resource, generation: number | undefined, now: Date): boolean {
    const key = `${podAlert.metadata.uid}/${generation}`;
    const last = this.secretChecked.get(key);
    if (last !== undefined && now.getTime() - last < evaluationPeriodMs) return false;
    this.secretChecked.set(key, now.getTime());
    if (this.secretChecked.size > 10_000) this.secretChecked.delete(this.secretChecked.keys().next().value!);
    return true;
  }

  /**
   * Every matching pod is judged; only the most recent `maxListedAlerts` become alerts, with their logs. A crash
   * loop's pod counts within its grace period for an alert that fires already: it turns unready anew at each crash,
   * which is no recovery to resolve and fire again after the grace period. A pod only starting does not: a workload
   * that always has one (scaling, churn) would never resolve.
   */
  private async evaluate(spec: AlertSpec, namespaces: string[], previous: Alert[], now: Date,
    firing: (identity: AlertIdentity) => boolean):
  Promise<{ alerts: Alert[]; unhealthy: Set<string>; found: UnhealthyPod[]; nextCrossing: number }> {
    let nextCrossing = Infinity;
    const found: { pod: Pod; trouble: Trouble }[] = [];
    if (!spec.alerts.checkRunningPods) return { alerts: [], unhealthy: new Set(), found: [], nextCrossing };
    const jobOwner = (namespace: string | undefined) => (job: string) =>
      cronJobOf(this.jobs.get(keyOf({ namespace, name: job }))?.metadata);
    const workloadOfPod = (pod: Pod) => workloadOf(pod.metadata, jobOwner(pod.metadata.namespace));
    // Counted at once; the evaluation period judges it again, so it needs no crossing of its own.
    const keepsFiring = (pod: Pod) => failedLately(pod, spec.gracePeriodSeconds * 1000, now) && firing({
      ...(this.clusterScoped ? { namespace: pod.metadata.namespace } : {}), owner: workloadName(workloadOfPod(pod)),
      ...(spec.groupBy === 'pod' ? { pod: pod.metadata.name } : {}) });
    for (const pod of namespaces.flatMap((n) => this.pods.listNamespace(n))) {
      if (!matches(spec.selector ?? {}, pod.metadata.labels)) continue;
      const problem = trouble(pod);
      if (!problem) continue;
      const counts = problem.since.getTime() + spec.gracePeriodSeconds * 1000;
      if (counts > now.getTime() && !keepsFiring(pod)) {
        nextCrossing = Math.min(nextCrossing, counts);
        continue;
      }
      found.push({ pod, trouble: problem });
    }
    found.sort((a, b) => b.trouble.since.getTime() - a.trouble.since.getTime() ||
      a.pod.metadata.name.localeCompare(b.pod.metadata.name));
    const listed = found.slice(0, maxListedAlerts);
    const logBytes = logShareBytes(listed.length);
    const alerts = await Promise.all(listed.map(({ pod, trouble: problem }) => this.alertFor(pod, problem,
      this.logTails ? spec.logLines : 0,
      logBytes, previous.find((p) => p.pod === pod.metadata.name && p.namespace === this.namespaceOf(pod)))));
    const unhealthyPods = found.map(({ pod, trouble: problem }): UnhealthyPod => ({ pod: pod.metadata.name,
      ...(this.clusterScoped ? { namespace: pod.metadata.namespace } : {}), reason: problem.reason, since: problem.since,
      workload: workloadOfPod(pod),
      ...(problem.container ? { container: problem.container } : {}) }));
    const podKey = (p: { namespace?: string; pod: string }) => `${p.namespace ?? ''}/${p.pod}`;
    const owners = new Map(unhealthyPods.map((p) => [podKey(p), workloadName(p.workload)]));
    return { alerts: alerts.map((a) => ({ ...a, owner: owners.get(podKey(a)) })), unhealthy: new Set(owners.keys()),
      found: unhealthyPods, nextCrossing };
  }

  /** A pod's namespace as its alert entry carries it: a ClusterPodAlert's entries only. */
  private namespaceOf(pod: Pod): string | undefined {
    return this.clusterScoped ? pod.metadata.namespace : undefined;
  }

  private async alertFor(pod: Pod, found: Trouble, logLines: number, logBytes: number, previous: Alert | undefined):
  Promise<Alert> {
    const namespace = this.namespaceOf(pod);
    const alert: Alert = { pod: pod.metadata.name, ...(namespace ? { namespace } : {}), phase: found.phase, reason: found.reason, since: timestamp(found.since),
      containers: found.containers, ...(found.message ? { message: clip(found.message, 4096) } : {}),
      ...(found.container ? { container: found.container } : {}) };
    if (!found.container || logLines === 0) return alert;
    const restarts = (a: { containers?: { name: string; restartCount?: number }[] } | undefined) =>
      a?.containers?.find((c) => c.name === found.container)?.restartCount;
    // A tail already read stays until the container restarts; a log that could not be read is tried again.
    if (previous?.logTail !== undefined && previous.container === found.container && restarts(previous) === restarts(alert)) {
      return { ...alert, logTail: previous.logTail };
    }
    try {
      const text = await this.ctx.client.getText(types.pods, pod.metadata.namespace!, pod.metadata.name, 'log',
        { container: found.container, tailLines: logLines, limitBytes: logBytes, previous: found.previousLog });
      // The kubelet has answered 200 before it reads the log, so its failure to read one comes as the body: while a
      // just-exited instance's log is not readable yet, or one rotated away as the container restarted.
      if (isKubeletLogFailure(text)) return { ...alert, logError: `no log yet: ${text.trim()}`.slice(0, 1024) };
      return { ...alert, logTail: text.slice(-logBytes) };
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      return { ...alert, logError: `no log: ${error.message}`.slice(0, 1024) };
    }
  }

  /** Writes status; lastEvaluationTime moves only when something else changed or a period has passed. */
  private async write(podAlert: Resource, status: Partial<PodAlertStatus>, now: Date):
  Promise<{ written: boolean; object: Resource }> {
    const { lastEvaluationTime: last, ...before } = podAlert.status ?? {};
    const { lastEvaluationTime: _ignored, ...after } = status;
    const recent = last && now.getTime() - Date.parse(last) < evaluationPeriodMs;
    const lastEvaluationTime = recent && isDeepStrictEqual(JSON.parse(JSON.stringify(before)), JSON.parse(JSON.stringify(after)))
      ? last : timestamp(now);
    return writeStatus(this.ctx.client, this.podAlertType, podAlert, { ...after, lastEvaluationTime });
  }

  private text(podAlert: Resource, alert: Alert): string {
    const restarts = alert.containers?.find((c) => c.name === alert.container)?.restartCount ?? 0;
    return alertText({ ...alert, namespace: alert.namespace ?? podAlert.metadata.namespace, restarts });
  }

  private noteReasonsSeen(workloads: WorkloadAlert[], found: UnhealthyPod[],
    key: (w: AlertIdentity) => string, now: Date): void {
    for (const w of workloads) {
      const has = found.some((p) => p.reason === w.reason && workloadName(p.workload) === w.owner &&
        p.namespace === w.namespace && (w.pod === undefined || p.pod === w.pod));
      // A reason held that no pod has, unknown since a restart: its hold starts now, and ends.
      if (has || !this.reasonSeen.has(key(w))) {
        this.reasonSeen.delete(key(w));
        this.reasonSeen.set(key(w), now.getTime());
      }
    }
    while (this.reasonSeen.size > 50_000) this.reasonSeen.delete(this.reasonSeen.keys().next().value!);
  }

  /**
   * An alert's message: of one pod (groupBy pod, or a pod of its own), as its listed alert tells; of a workload, its
   * pods counted.
   */
  private message(podAlert: Resource, workload: WorkloadAlert, alerts: Alert[], resolved = false):
  Omit<Notification, 'event'> {
    const fields = { ...(workload.namespace ? { namespace: workload.namespace } : {}), owner: workload.owner,
      pods: workload.unhealthyPods, reason: workload.reason, since: workload.since };
    const [kind, name] = workload.owner.split('/');
    const pod = workload.pod ?? (kind === 'Pod' ? name : undefined);
    if (pod !== undefined) {
      // One not listed (past the newest maxListedAlerts) is told from its entry.
      const alert = alerts.find((a) => a.pod === pod && a.namespace === workload.namespace) ??
        { pod, ...(workload.namespace ? { namespace: workload.namespace } : {}), reason: workload.reason,
          since: workload.since, phase: '' };
      return { ...fields, pod, text: resolved ? this.resolvedText(podAlert, alert) : this.text(podAlert, alert) };
    }
    const namespace = workload.namespace ?? podAlert.metadata.namespace;
    return { ...fields, text: resolved ? workloadResolvedText(workload, namespace) : workloadText(workload, namespace) };
  }

  /** What Alertmanager is told of an alert. */
  private subject(podAlert: Resource, workload: WorkloadAlert, alerts: Alert[], resolved = false): Subject {
    return workloadSubject(workload, this.message(podAlert, workload, alerts, resolved).text, alerts);
  }

  private resolvedText(podAlert: Resource, alert: Alert): string {
    const namespace = alert.namespace ?? podAlert.metadata.namespace;
    const pod = this.pods.get(keyOf({ namespace, name: alert.pod }));
    const gone = !pod || pod.metadata.deletionTimestamp;
    return `Pod ${alert.pod} in ${namespace} ${gone ? 'is gone' : 'recovered'} (was ${alert.reason})`;
  }
}

/** The operator of a PodAlert-like kind: PodAlert here, ClusterPodAlert in its own folder. */
export function alertOperator(kind: AlertKind): Operator<ControllerOptions> {
  return {
    name: kind.name,
    permissions: kind.permissions,
    everyNamespace: kind.definition.scope === 'Cluster',
    setup(ctx) {
      const reconciler = new PodAlertReconciler(ctx, kind);
      ctx.addController({
        name: kind.name,
        for: kindType(kind.definition),
        watches: [{ type: types.pods, view: podView, map: (pod) => reconciler.podAlertsFor(pod) },
          // A namespace matters when its labels change (a selector may pick it, or no longer), not its status.
          ...reconciler.clusterScoped ? [{ type: types.namespaces, view: metadataView,
            map: () => reconciler.allPodAlerts(),
            updateMatters: (old: KubeObject, updated: KubeObject) => !isDeepStrictEqual(old.metadata.labels,
              updated.metadata.labels) }] : []],
        workers: 2,
        reconcile: (request, context) => reconciler.reconcile(request, context),
      });
    },
  };
}

export const podAlertOperator = alertOperator({ name: 'podalert', definition: PodAlert, permissions });
