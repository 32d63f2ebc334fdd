// PostgresCluster: each reconcile observes the members (claims and pods) and the Lease naming the primary, takes the
// one next step plan.ts decides, and reports. Commands inside members (WAL position, promotion, synchronous
// standbys) go through pods/exec with the scripts' text, so they work on any postgres image. Replicas stream from the
// read-write Service, which follows the role label: a promotion takes the Lease, promotes, then relabels.
import type { ControllerOptions } from '../../api/flags.ts';
import type { ReconcileContext, ReconcileResult, Request } from '../../runtime/controller.ts';
import type { Operator, OperatorContext } from '../../runtime/manager.ts';
import type { Pod } from '../../runtime/core.ts';
import type { Owner } from '../../runtime/objects.ts';
import { applyIfChanged, isControlledBy } from '../../runtime/objects.ts';
import { readPrimary } from '../../runtime/primary.ts';
import { ApiError } from '../../runtime/rest.ts';
import { kindType, keyOf, types, type KubeObject } from '../../runtime/resources.ts';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { findCondition, writeStatusWithConditions, type Condition } from '../../runtime/status.ts';
import { microTime, type Lease } from '../../runtime/leader.ts';
import { agentIdentity, backupClaim, backupCronJob, clusterLabel, credentials, lease, memberClaim, memberLabel, memberPod,
  names, roleLabel, scripts, services, synchronousAnnotation, versionAnnotation } from './objects.ts';
import { permissions } from './permissions.ts';
import { bestCandidate, currentPrimary, leaseDurationMs, majorOf, nextStep, type Member, type MemberPod, type Observed,
  type Role, type Step } from './plan.ts';
import { parsePosition, positionScript, promoteScript, synchronousScript } from './scripts.ts';
import { PostgresCluster, type PostgresClusterResource, type PostgresClusterStatus } from './schema.ts';

interface CronJob extends KubeObject {
  status?: { lastSuccessfulTime?: string };
}

type Cluster = PostgresClusterResource & Owner;
type Spec = PostgresClusterResource['spec'];
type Pending = Omit<Condition, 'lastTransitionTime'>;

const clusterType = kindType(PostgresCluster);
const retiredLabel = 'keelson.dev/retired';
/**
 * Every object a cluster owns carries its cluster label, so the cache holds these, whole (they are applied and compared
 * field by field), and none of the other pods, claims, services, ConfigMaps and CronJobs in the namespaces watched.
 */
const ownedView = { labelSelector: clusterLabel };
const phases: Record<Step['kind'], NonNullable<PostgresClusterStatus['phase']> | undefined> = {
  'paused': 'Paused', 'wait': undefined, 'create-seed': 'Creating', 'failed': 'Failed', 'remove-stranger': undefined,
  'delete-pod': undefined, 'start-member': undefined, 'failover': 'FailingOver', 'add-member': 'Scaling',
  'remove-member': 'Scaling', 'upgrade-member': 'Upgrading', 'switchover': 'Upgrading', 'steady': 'Running',
  'finish-promotion': 'FailingOver', 'fence-primary': 'Recovering', 'set-synchronous': undefined,
};
/** How often a steady cluster is looked at again: its Lease is read, not watched. */
const steadyRequeueMs = 5_000;

const ready = (pod: Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const indexOf = (name: string) => Number(/-(\d{4})$/.exec(name)?.[1] ?? -1);

class PostgresClusterReconciler {
  private readonly clusters;
  private readonly pods;
  private readonly claims;
  private readonly services;
  private readonly configMaps;
  private readonly cronJobs;
  /** Clusters whose credentials Secret this process has made sure of. */
  private readonly credentialed = new Set<string>();
  /** Clusters whose member agents' ServiceAccount and Role this process has applied. */
  private readonly agentsIdentified = new Set<string>();
  /** Promotions made that the cache may not show yet, by cluster uid: no step is taken until it does. */
  private readonly promotions = new Map<string, string>();
  /** Each cluster's Lease as last seen changed, and when, on this process's monotonic clock. */
  private readonly leaseSeen = new Map<string, { version: string; at: number }>();

  constructor(private readonly ctx: OperatorContext, private readonly agentImage: string) {
    const informer = <T extends KubeObject>(type: typeof types.pods) =>
      ctx.cache.informer<T>(type, ctx.namespace, ctx.client, ownedView);
    this.clusters = ctx.cache.informer<PostgresClusterResource>(clusterType, ctx.namespace, ctx.client);
    this.pods = informer<Pod>(types.pods);
    this.claims = informer<KubeObject>(types.persistentVolumeClaims);
    this.services = informer<KubeObject>(types.services);
    this.configMaps = informer<KubeObject>(types.configMaps);
    this.cronJobs = informer<CronJob>(types.cronJobs);
  }

  async reconcile(request: Request, { log }: ReconcileContext, now = new Date()): Promise<ReconcileResult> {
    const primary = readPrimary(this.clusters, request, PostgresCluster);
    if (!primary) return;
    const { object: cluster, problems } = primary;
    const generation = cluster.metadata.generation;
    const conditions: Pending[] = [];
    if (problems.length) {
      await this.report(cluster, {}, [{ type: 'Ready', status: 'False', reason: 'InvalidSpec', observedGeneration: generation,
        message: `${problems.join('; ')}; nothing was changed` }]);
      return;
    }
    // A major version change is refused: members keep running the version they have.
    let spec: Spec = primary.spec;
    const current = cluster.status?.currentVersion;
    if (current && majorOf(spec.version) !== majorOf(current)) {
      conditions.push({ type: 'VersionChangeRefused', status: 'True', reason: 'MajorVersionChange', observedGeneration: generation,
        message: `a change from PostgreSQL ${current} to ${spec.version} needs a dump and restore (or pg_upgrade), ` +
          `which this operator does not do; members stay on ${current}` });
      spec = { ...spec, version: current, image: undefined };
    } else {
      conditions.push({ type: 'VersionChangeRefused', status: 'False', reason: 'NoMajorChange', observedGeneration: generation,
        message: 'the version asked for is the one running, or a minor change of it' });
    }

    // The shared objects are applied, but a failure to is only reported: it must never hold up a failover.
    if (!spec.paused) conditions.push(await this.ensureShared(cluster, spec).then(() => ({ type: 'SharedObjectsReady',
      status: 'True' as const, reason: 'Applied', message: 'Secret, scripts, Services, agent identity and backups are ' +
        'as the spec says', observedGeneration: generation }), async (error: Error) => {
      await this.ctx.events.record(cluster, 'Warning', 'ApplyFailed', error.message.slice(0, 1000));
      return { type: 'SharedObjectsReady', status: 'False' as const, reason: 'ApplyFailed', message: error.message,
        observedGeneration: generation };
    }));
    const leaseObject = await this.ctx.client.get<Lease>(types.leases, request.namespace, names.lease(request.name));
    const observed = this.observe(cluster, spec, now, leaseObject);
    const promoted = this.promotions.get(cluster.metadata.uid);
    if (promoted && observed.members.find((m) => m.name === promoted)?.pod?.role === 'primary') {
      this.promotions.delete(cluster.metadata.uid);
    }
    const step: Step = this.promotions.has(cluster.metadata.uid)
      ? { kind: 'wait', reason: `waiting to see ${promoted} as primary`, requeueAfterMs: 1000 }
      : nextStep(observed);
    if (step.kind !== 'wait' && step.kind !== 'steady' && step.kind !== 'paused') log.info({ step }, 'step');
    const outcome = await this.take(cluster, spec, observed, step, leaseObject);
    const primaryName = outcome.primary ?? currentPrimary(observed);
    const primaryPod = primaryName ? this.pods.get(keyOf({ namespace: request.namespace, name: primaryName })) : undefined;
    const primaryUp = primaryPod !== undefined && !primaryPod.metadata.deletionTimestamp && ready(primaryPod);
    // A primary not up yet has renewed nothing: its Lease speaks only of a primary that runs.
    const leaseExpired = primaryUp && !outcome.primary && observed.lease?.expired;
    conditions.push(primaryUp && !leaseExpired
      ? { type: 'PrimaryAvailable', status: 'True', reason: 'Ready', message: `${primaryName} takes writes`, observedGeneration: generation }
      : { type: 'PrimaryAvailable', status: 'False', reason: leaseExpired ? 'LeaseExpired' : 'Unavailable',
        observedGeneration: generation, message: !primaryName ? 'no primary yet' : leaseExpired
          ? `${primaryName} has not renewed the Lease ${names.lease(request.name)} for ${leaseDurationMs / 1000}s: ` +
            'its agent has stopped PostgreSQL, or cannot reach the apiserver' : `${primaryName} is not ready` });
    conditions.push(...this.readiness(step, observed, generation));
    await this.report(cluster, this.summary(cluster, observed, step, outcome.primary), conditions);
    if (step.kind === 'wait' && step.requeueAfterMs) return { requeueAfterMs: step.requeueAfterMs };
    return step.kind === 'paused' || step.kind === 'failed' ? undefined : { requeueAfterMs: steadyRequeueMs };
  }

  /** The Lease's holder, and whether it went unrenewed for its whole duration since this process saw it change. */
  private leaseState(cluster: Cluster, object: Lease | undefined): Observed['lease'] {
    const holder = object?.spec?.holderIdentity;
    if (!object || !holder) {
      this.leaseSeen.delete(cluster.metadata.uid);
      return undefined;
    }
    const version = object.metadata.resourceVersion!;
    const seen = this.leaseSeen.get(cluster.metadata.uid);
    const at = seen?.version === version ? seen.at : performance.now();
    this.leaseSeen.set(cluster.metadata.uid, { version, at });
    return { holder, expired: performance.now() - at >= leaseDurationMs };
  }

  /**
   * The Secret (made once, never rewritten), the agents' identity, the scripts, the Services and the backups, each
   * tried whatever became of the others; what failed is thrown together at the end.
   */
  private async ensureShared(cluster: Cluster, spec: Spec): Promise<void> {
    const ns = cluster.metadata.namespace!;
    const uid = cluster.metadata.uid;
    const current = (informer: { get(key: string): KubeObject | undefined }, name: string) => informer.get(keyOf({ namespace: ns, name }));
    const cronJob = current(this.cronJobs, names.backups(cluster.metadata.name));
    const tasks: [what: string, task: () => Promise<unknown>][] = [
      ['the member agents\' identity', async () => {
        if (this.agentsIdentified.has(uid)) return;
        const { serviceAccount, role, roleBinding } = agentIdentity(cluster);
        for (const [type, object] of [[types.serviceAccounts, serviceAccount], [types.roles, role],
          [types.roleBindings, roleBinding]] as const) await this.ctx.client.apply(type, object);
        this.agentsIdentified.add(uid);
      }],
      ['the credentials', async () => {
        if (this.credentialed.has(uid)) return;
        await this.ctx.client.create(types.secrets, credentials(cluster)).catch((error: unknown) => {
          if (!(error instanceof ApiError && error.conflict)) throw error;
        });
        this.credentialed.add(uid);
      }],
      ['the scripts', () => applyIfChanged(this.ctx.client, types.configMaps, scripts(cluster),
        current(this.configMaps, names.scripts(cluster.metadata.name)))],
      ...services(cluster).map((service) => [`Service ${service.metadata.name}`, () => applyIfChanged(this.ctx.client,
        types.services, service, current(this.services, service.metadata.name))] as [string, () => Promise<unknown>]),
      ['the backups', async () => {
        if (spec.backup) {
          await applyIfChanged(this.ctx.client, types.persistentVolumeClaims, backupClaim(cluster, spec),
            current(this.claims, names.backups(cluster.metadata.name)));
          await applyIfChanged(this.ctx.client, types.cronJobs, backupCronJob(cluster, spec), cronJob);
        } else if (cronJob && isControlledBy(cronJob, cluster)) {
          await this.ctx.client.delete(types.cronJobs, ns, cronJob.metadata.name, cronJob.metadata.uid);
        }
      }],
    ];
    const failures: string[] = [];
    for (const [what, task] of tasks) {
      await task().catch((error: Error) => failures.push(`${what}: ${error.message}`));
    }
    if (failures.length) throw new Error(failures.join('; '));
  }

  private observe(cluster: Cluster, spec: Spec, now: Date, leaseObject: Lease | undefined): Observed {
    const ns = cluster.metadata.namespace!;
    const owned = (o: KubeObject) => isControlledBy(o, cluster) && o.metadata.labels?.[memberLabel] !== undefined;
    const claims = this.claims.listNamespace(ns).filter(owned);
    const live = claims.filter((c) => !c.metadata.deletionTimestamp && !c.metadata.labels?.[retiredLabel]);
    const pods = this.pods.listNamespace(ns).filter(owned);
    const members: Member[] = live.map((claim) => {
      const name = claim.metadata.name;
      const pod = pods.find((p) => p.metadata.name === name);
      return { name, index: indexOf(name), claim: true, ...(pod ? { pod: {
        phase: (pod.status?.phase ?? 'Pending') as MemberPod['phase'], ready: ready(pod),
        role: (pod.metadata.labels?.[roleLabel] ?? 'replica') as Role,
        version: pod.metadata.annotations?.[versionAnnotation] ?? '', deleting: Boolean(pod.metadata.deletionTimestamp) } } : {}) };
    });
    const lost = findCondition(cluster.status?.conditions as Condition[] | undefined, 'PrimaryAvailable');
    const leaseNow = this.leaseState(cluster, leaseObject);
    const primaryName = currentPrimary({ members, primary: cluster.status?.primary, lease: leaseNow });
    const primaryPod = pods.find((p) => p.metadata.name === primaryName);
    return {
      lease: leaseNow,
      synchronousReplicas: spec.synchronousReplicas,
      synchronousStandbyNames: primaryPod?.metadata.annotations?.[synchronousAnnotation],
      cluster: cluster.metadata.name, size: spec.size, version: spec.version, paused: spec.paused,
      keepVolumeOnScaleDown: spec.storage.keepOnScaleDown, members,
      nextIndex: Math.max(-1, ...claims.map((c) => indexOf(c.metadata.name))) + 1,
      strangers: pods.filter((p) => !live.some((c) => c.metadata.name === p.metadata.name) && !p.metadata.deletionTimestamp)
        .map((p) => p.metadata.name),
      terminating: [...pods.map((p) => ['pod', p] as const), ...claims.map((c) => ['claim', c] as const)]
        .filter(([, o]) => o.metadata.deletionTimestamp).map(([what, o]) => `${what} ${o.metadata.name}`),
      primary: cluster.status?.primary,
      primaryLostSince: lost?.status === 'False' ? new Date(lost.lastTransitionTime) : undefined,
      backupAvailable: this.backupOf(cluster, spec) !== undefined,
      bootstrapFromBackup: spec.bootstrap !== undefined,
      now,
    };
  }

  /** The cluster whose backups a restore reads: the bootstrap source, else the cluster itself once it has one. */
  private backupOf(cluster: Cluster, spec: Spec): { cluster: string; backup?: string } | undefined {
    const source = spec.bootstrap?.fromBackup;
    if (source && !cluster.status?.primary) {
      const other = this.clusters.get(keyOf({ namespace: cluster.metadata.namespace, name: source.cluster }));
      return other?.status?.lastBackup ? { cluster: source.cluster, backup: source.backup } : undefined;
    }
    return cluster.status?.lastBackup ? { cluster: cluster.metadata.name } : undefined;
  }

  private async take(cluster: Cluster, spec: Spec, observed: Observed, step: Step, leaseObject: Lease | undefined):
  Promise<{ primary?: string }> {
    const ns = cluster.metadata.namespace!;
    const event = (type: 'Normal' | 'Warning', reason: string, note: string) => this.ctx.events.record(cluster, type, reason, note);
    const startPod = (member: string, role: Role, restore = false) => this.ctx.client.create(types.pods,
      memberPod(cluster, spec, member, { role, agentImage: this.agentImage,
        ...(restore ? { restoreFrom: this.backupOf(cluster, spec) } : {}) }));
    // A cluster made before it had a Lease gets one naming the primary it has.
    if (!leaseObject && observed.members.length) {
      await this.ctx.client.create(types.leases, lease(cluster, currentPrimary(observed)!));
    }
    switch (step.kind) {
      case 'create-seed':
        // No member is left to hold the Lease, so it is the seed's.
        await this.takeLease(cluster, leaseObject, step.member);
        await this.ctx.client.apply(types.persistentVolumeClaims, memberClaim(cluster, spec, step.member));
        await startPod(step.member, 'primary', step.restore);
        await event('Normal', step.restore ? 'Restoring' : 'MemberAdded', step.restore
          ? `Restoring seed member ${step.member} from the latest backup` : `Added seed member ${step.member}`);
        return { primary: step.member };
      case 'failed':
        await event('Warning', step.reason, step.message);
        return {};
      case 'remove-stranger':
        await this.ctx.client.delete(types.pods, ns, step.pod);
        await event('Normal', 'StrangerRemoved', `Deleted pod ${step.pod}: it is no member of the cluster`);
        return {};
      case 'delete-pod':
        await this.ctx.client.delete(types.pods, ns, step.member);
        await event('Normal', 'MemberReplacing', `Deleted the pod of member ${step.member} (${step.reason}); it comes back on its volume`);
        return {};
      case 'start-member': {
        // The cache may not show yet that the claim is going away; a pod started on it now would come up on an
        // empty volume once the claim is recreated under the same name.
        const claim = await this.ctx.client.get(types.persistentVolumeClaims, ns, step.member);
        if (!claim || claim.metadata.deletionTimestamp) return {};
        await startPod(step.member, step.role);
        await event('Normal', 'MemberReplaced', `Started member ${step.member} as ${step.role} on its volume`);
        return {};
      }
      case 'add-member':
        await this.ctx.client.apply(types.persistentVolumeClaims, memberClaim(cluster, spec, step.member));
        await startPod(step.member, 'replica');
        await event('Normal', 'MemberAdded', `Added member ${step.member} as a replica`);
        return {};
      case 'remove-member':
        await this.ctx.client.delete(types.pods, ns, step.member);
        if (step.deleteClaim) await this.ctx.client.delete(types.persistentVolumeClaims, ns, step.member);
        else {
          await this.ctx.client.patch(types.persistentVolumeClaims, ns, step.member,
            { metadata: { labels: { [retiredLabel]: 'true' } } }, 'merge');
        }
        await event('Normal', 'MemberRemoved', `Removed member ${step.member}${step.deleteClaim ? ' and its volume' : '; its volume is kept'}`);
        return {};
      case 'upgrade-member':
        await this.ctx.client.delete(types.pods, ns, step.member);
        await event('Normal', 'MemberUpgrading', `Restarting member ${step.member} on PostgreSQL ${spec.version}`);
        return {};
      case 'switchover':
      case 'failover': {
        // A failover takes the Lease at the version the plan saw unrenewed (a renewal since fails the write); a
        // switchover takes it once the old primary's pod is gone, its agent with it.
        if (step.kind === 'switchover') await this.stopPrimary(ns, step.from);
        const { chosen, unanswered } = await this.chooseCandidate(ns, step.candidates);
        if (step.kind === 'failover') await this.takeLease(cluster, leaseObject, chosen);
        else await this.takeLeaseFromGone(cluster, chosen);
        await this.promote(ns, chosen);
        this.promotions.set(cluster.metadata.uid, chosen);
        await event(step.kind === 'failover' ? 'Warning' : 'Normal', 'Promoted', `Promoted ${chosen} to primary in place ` +
          `of ${step.from} (${step.kind}: the replica with the most replayed WAL among ${step.candidates.join(', ')}` +
          `${unanswered.length ? `; not answering: ${unanswered.join('; ')}` : ''})`);
        return { primary: chosen };
      }
      case 'finish-promotion':
        await this.promote(ns, step.member);
        this.promotions.set(cluster.metadata.uid, step.member);
        await event('Normal', 'Promoted', `Finished promoting ${step.member}, which the Lease names`);
        return { primary: step.member };
      case 'fence-primary':
        await this.ctx.client.delete(types.pods, ns, step.member);
        await event('Warning', 'MultiplePrimaries', `Pod ${step.member} is labelled primary, but the Lease names ` +
          `${step.holder}: its agent stops PostgreSQL, and its pod was deleted to come back as a replica`);
        return {};
      case 'set-synchronous':
        await this.run(ns, step.member, `SYNCHRONOUS_STANDBY_NAMES='${step.value}'\n${synchronousScript}`);
        await this.ctx.client.patch(types.pods, ns, step.member,
          { metadata: { annotations: { [synchronousAnnotation]: step.value } } }, 'merge');
        await event('Normal', 'SynchronousStandbys', step.value
          ? `Commits on ${step.member} wait for ${step.value}` : `Commits on ${step.member} wait for no replica`);
        return {};
      default:
        return {};
    }
  }

  /** Names `holder` in the Lease: created if missing, else written over `current`'s resourceVersion. */
  private async takeLease(cluster: Cluster, current: Lease | undefined, holder: string): Promise<void> {
    if (!current) {
      await this.ctx.client.create(types.leases, lease(cluster, holder));
      return;
    }
    if (current.spec?.holderIdentity === holder) return;
    const now = microTime();
    await this.ctx.client.update<Lease>(types.leases, { ...current, spec: { ...current.spec, holderIdentity: holder,
      acquireTime: now, renewTime: now, leaseTransitions: (current.spec?.leaseTransitions ?? 0) + 1 } });
  }

  /** Takes the Lease from a holder whose pod is gone: nothing renews it any more, so it is read until a write holds. */
  private async takeLeaseFromGone(cluster: Cluster, holder: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.ctx.client.get<Lease>(types.leases, cluster.metadata.namespace!, names.lease(cluster.metadata.name));
      try {
        await this.takeLease(cluster, current, holder);
        return;
      } catch (error) {
        if (!(error instanceof ApiError && error.conflict) || attempt === 3) throw error;
      }
    }
  }

  /** Deletes the primary's pod and waits (60 s at most) until it is gone, so that two primaries never take writes. */
  private async stopPrimary(namespace: string, name: string): Promise<void> {
    await this.ctx.client.delete(types.pods, namespace, name);
    for (let waited = 0; this.pods.get(keyOf({ namespace, name })) && waited < 60_000; waited += 500) await sleep(500);
    if (this.pods.get(keyOf({ namespace, name }))) throw new Error(`the pod of primary ${name} has not gone after 60s`);
  }

  private async run(namespace: string, pod: string, script: string): Promise<string> {
    const result = await this.ctx.client.exec(types.pods, { namespace, pod, container: 'postgres', command: ['sh', '-c', script] });
    if (result.exitCode !== 0) throw new Error(`${pod}: ${result.stderr.trim() || `exit ${result.exitCode}`}`);
    return result.stdout;
  }

  /** The candidate that replayed the most WAL, among those that answer; one that does not never blocks the rest. */
  private async chooseCandidate(namespace: string, candidates: string[]): Promise<{ chosen: string; unanswered: string[] }> {
    const answers = await Promise.allSettled(candidates.map(async (member) =>
      ({ member, lsn: parsePosition(await this.run(namespace, member, positionScript)).lsn })));
    const positions = answers.flatMap((a) => a.status === 'fulfilled' ? [a.value] : []);
    const unanswered = answers.flatMap((a, i) => a.status === 'rejected' ? [`${candidates[i]}: ${(a.reason as Error).message}`] : []);
    const chosen = bestCandidate(positions);
    if (!chosen) throw new Error(`no candidate answered: ${unanswered.join('; ')}`);
    return { chosen, unanswered };
  }

  /** Promotes the member (once: a promoted member is left as it is), then points the read-write Service at it. */
  private async promote(namespace: string, member: string): Promise<void> {
    await this.run(namespace, member, promoteScript);
    await this.ctx.client.patch(types.pods, namespace, member, { metadata: { labels: { [roleLabel]: 'primary' } } }, 'merge');
  }

  private readiness(step: Step, observed: Observed, generation: number): Pending[] {
    const base = { type: 'Ready', observedGeneration: generation };
    switch (step.kind) {
      case 'steady':
        return [{ ...base, status: 'True', reason: 'Running', message: `${observed.size} members, all ready` }];
      case 'paused':
        return [{ ...base, status: 'False', reason: 'Paused', message: 'spec.paused is set: nothing is changed until it is unset' }];
      case 'failed':
        return [{ ...base, status: 'False', reason: step.reason, message: step.message }];
      case 'wait':
        return [{ ...base, status: 'False', reason: 'Waiting', message: step.reason }];
      default:
        return [{ ...base, status: 'False', reason: 'Reconciling', message: `next step: ${step.kind}` }];
    }
  }

  private summary(cluster: Cluster, observed: Observed, step: Step, promoted: string | undefined): Partial<PostgresClusterStatus> {
    const members = observed.members.map((m) => ({ name: m.name, role: m.name === promoted ? 'primary' as const : m.pod?.role ?? 'replica',
      ready: m.pod?.ready ?? false }));
    const versions = new Set(observed.members.map((m) => m.pod?.version).filter(Boolean));
    const cronJob = this.cronJobs.get(keyOf({ namespace: cluster.metadata.namespace, name: names.backups(cluster.metadata.name) }));
    const backupTime = cronJob?.status?.lastSuccessfulTime;
    return {
      phase: phases[step.kind] ?? cluster.status?.phase ?? 'Creating',
      primary: promoted ?? currentPrimary(observed),
      readyMembers: members.filter((m) => m.ready).length,
      members,
      currentVersion: versions.size === 1 ? [...versions][0] : cluster.status?.currentVersion,
      ...(backupTime ? { lastBackup: { name: `${names.backups(cluster.metadata.name)}@${backupTime}`, time: backupTime } } : {}),
    };
  }

  private async report(cluster: Cluster, status: Partial<PostgresClusterStatus>, conditions: Pending[]): Promise<void> {
    await writeStatusWithConditions(this.ctx.client, clusterType, cluster,
      { ...status, observedGeneration: cluster.metadata.generation }, conditions);
  }
}

/** The image this version's build names (images/recipes.ts): package.json sits beside build/ here and in the image. */
function defaultAgentImage(): string {
  const file = fileURLToPath(new URL('../../../../package.json', import.meta.url));
  return `keelson/controller:${(JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version}`;
}

export const postgresClusterOperator: Operator<ControllerOptions> = {
  name: 'postgrescluster',
  permissions,
  setup(ctx) {
    const reconciler = new PostgresClusterReconciler(ctx, ctx.settings.postgresAgentImage ?? defaultAgentImage());
    ctx.addController({
      name: 'postgrescluster',
      for: clusterType,
      owns: [types.pods, types.persistentVolumeClaims, types.services, types.configMaps, types.cronJobs]
        .map((type) => ({ type, view: ownedView })),
      workers: 2,
      reconcile: (request, context) => reconciler.reconcile(request, context),
    });
  },
};

