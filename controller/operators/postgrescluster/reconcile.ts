// PostgresCluster: each reconcile observes the members (claims and pods) and the Lease naming the primary, takes the
// one next step plan.ts decides, and reports. Commands inside members (WAL position, promotion, synchronous
// standbys) go through pods/exec with the scripts' text, so they work on any postgres image. Replicas stream from the
// read-write Service, which follows the role label: a promotion takes the Lease, promotes, then relabels.
import type { ControllerOptions } from '../../api/flags.ts';
import type { ReconcileContext, ReconcileResult, Request } from '../../runtime/controller.ts';
import type { Operator, OperatorContext } from '../../runtime/manager.ts';
import { podReady, type Pod } from '../../runtime/core.ts';
import type { Logger } from 'pino';
import type { Owner } from '../../runtime/objects.ts';
import { syncPodMonitor } from '../pod-monitor.ts';
import { registerClusterMetrics } from './cluster-metrics.ts';
import { claimsToGrow, refusalReason, storageCondition, type Claim } from './storage.ts';
import { controllerOf, ensureOwned, isControlledBy, ownerReferencesFor } from '../../runtime/objects.ts';
import { readPrimary } from '../../runtime/primary.ts';
import { ApiError } from '../../runtime/rest.ts';
import { kindType, keyOf, types, type KubeObject, type ResourceType } from '../../runtime/resources.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { releaseImage } from '../../api/release.ts';
import { writeStatusWithConditions, type Condition } from '../../runtime/status.ts';
import { microTime, type Lease } from '../../runtime/leader.ts';
import { agentIdentity, backupClaim, bytesOf, clusterLabel, configurationMap, credentials, deletesData, disruptionBudgets, imageOf, lease,
  memberClaim, memberLabel,
  restoringAnnotation,
  memberLabels, memberPod, memberPodMonitor, metadata, names, type ReplicationSslMode, revisionAnnotation, roleLabel, scripts, services,
  memberLayout, repositoryHost, tlsAnnotation, versionAnnotation } from './objects.ts';
import { memberHostOptions, repositoryHostContainer, repositoryHostName, repositoryHostServing, repositoryRevisionAnnotation }
  from './repository-host.ts';
import { archiveRevision, recoveryTarget } from './archive.ts';
import { archiverQuery, archivingCondition, parseArchiverStats, switchWalScript } from './archiving.ts';
import { StoreBackups, type RepositoryHost, type Standby } from './backups.ts';
import { backupPeerSecret, BackupPeers, backupSource, standbyOptions } from './standby-backups.ts';
import { MemberConfigurations, restartPendingAnnotation, ScriptFailed } from './configuration.ts';
import { ManagedRoles } from './roles.ts';
import { ServerCertificates, type Followed, type TlsDeps } from './tls.ts';
import { switchoverRequest, type SwitchoverRequest, type SwitchoverStatus } from './switchover.ts';
import { MajorUpgrades, majorUpgradeCondition, pendingUpgrade, upgradeIntent, type MajorUpgradeStatus } from './upgrade.ts';
import { permissions } from './permissions.ts';
import { cordonChanged, cordoned, nodeView } from './drain.ts';
import { choosePromotion, currentPrimary, failsafeMembersAnnotation, failsafePeersAnnotation, failsafePort,
  leaseDurationMs, releasedSuffix, nextStep, primaryUp, synchronousStandbyNames,
  slotPattern, votersAfter, wantedSlots, wantedSynchronous, type CandidatePosition, type Member, type MemberPod, type Observed, type Role,
  type Step, type Synchronous } from './plan.ts';
import { monitorRoleScript, noDataExitCode, parsePosition, positionScript, promoteScript, synchronousScript } from './scripts.ts';
import { majorUpgradeRetryAnnotation, PostgresCluster, switchoverAnnotation, type PostgresClusterResource,
  type PostgresClusterStatus } from './schema.ts';
import { forgetUid, UidsSeen } from '../../runtime/memos.ts';

type Cluster = PostgresClusterResource & Owner;
type Spec = PostgresClusterResource['spec'];
type Pending = Omit<Condition, 'lastTransitionTime'>;
/** What a step did: a member promoted, the synchronous standbys now in force, why a promotion waits, the cluster as written. */
interface Outcome {
  primary?: string;
  synchronous?: Synchronous;
  waiting?: string;
  /** Why the step could not be taken without changing another's object. */
  blocked?: string;
  updated?: Cluster;
  /** How a switchover asked for ended. */
  switchover?: SwitchoverStatus;
}

/**
 * Whether the pod's postgres container runs (and so holds the passwords in its environment): a pod whose container
 * cannot start again without the credentials Secret stays in phase Running.
 */
const postgresRuns = (pod: Pod) => !pod.metadata.deletionTimestamp &&
  (pod.status?.containerStatuses?.some((c) => c.name === 'postgres' && c.state?.running !== undefined) ?? false);

const claimTaken = (member: string) => `PersistentVolumeClaim ${member} exists and belongs to something else: left ` +
  'unchanged; rename or remove it';

const commitsWait = (synchronous: Synchronous) => synchronous.quorum
  ? `commits wait for ${synchronousStandbyNames(synchronous)}` : 'commits wait for no replica';

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
  'remove-member': 'Scaling', 'replace-member': 'Recovering', 'upgrade-member': 'Upgrading', 'switchover': 'Upgrading', 'steady': 'Running',
  'finish-promotion': 'FailingOver', 'release-lease': 'FailingOver', 'fence-primary': 'Recovering', 'set-synchronous': undefined,
};
/** How often archiving is looked at, and how long pgBackRest may take to check it. */
const archiveCheckMs = 30_000;
/** How long a claim the apiserver refused to grow is left before it is asked again (its StorageClass may change). */
const resizeRetryMs = 5 * 60_000;
/** How often a steady cluster is looked at again: its Lease is read, not watched. */
const steadyRequeueMs = 5_000;

/** The retry annotation's value, if one status can hold (63 characters at most; a longer one is not an ask). */
const retryOf = (cluster: Cluster) => {
  const value = cluster.metadata.annotations?.[majorUpgradeRetryAnnotation];
  return value !== undefined && value.length <= 63 ? value : undefined;
};
/** Whether the step makes a member pod. */
const makesPod = (step: Step) => ['create-seed', 'start-member', 'add-member', 'upgrade-member', 'replace-member']
  .includes(step.kind);
const indexOf = (name: string) => Number(/-(\d{4})$/.exec(name)?.[1] ?? -1);
/** verify-full, unless the primary is a member made before members served TLS (its pod has no tlsAnnotation). */
const replicationSslMode = (pods: Pod[]): ReplicationSslMode => pods.some((p) => !p.metadata.deletionTimestamp &&
  p.metadata.labels?.[roleLabel] === 'primary' && p.metadata.annotations?.[tlsAnnotation] === undefined) ? 'prefer' : 'verify-full';

class PostgresClusterReconciler {
  private readonly clusters;
  private readonly pods;
  private readonly claims;
  private readonly services;
  private readonly disruptionBudgets;
  private readonly configMaps;
  private readonly cronJobs;
  private readonly serviceAccounts;
  private readonly roles;
  private readonly roleBindings;
  /** Nodes, when the operator switches primaries over before drains (drain.ts). */
  private readonly nodes;
  /** Promotions made that the cache may not show yet, by cluster uid: no step is taken until it does. */
  private readonly promotions = new Map<string, string>();
  /** Each cluster's Lease as last seen changed, and when, on this process's monotonic clock. */
  private readonly leaseSeen = new Map<string, { version: string; at: number }>();
  /**
   * Since when each cluster's primary has not been up, on this process's monotonic clock, by cluster uid: counted
   * afresh for a member just promoted, which needs a readiness probe or two before it is seen up.
   */
  private readonly lostSince = new Map<string, { primary: string | undefined; at: number }>();
  /**
   * The last look at each cluster's archiving, by cluster uid: on which primary pod, when, what it found, and the
   * primary's timeline.
   */
  private readonly archiveChecks = new Map<string, { pod: string; at: number; verifiedPod?: string; condition: Pending;
    timeline?: number; running?: Promise<void> }>();
  private readonly backups;
  private readonly configurations;
  private readonly managedRoles;
  private readonly certificates;
  private readonly backupPeers;
  private readonly upgrades;
  /** When this process last replaced a stuck member, by cluster uid. */
  private readonly replacedAt = new Map<string, number>();
  /** The primary pods (uids) the member agents' role was made on; gone pods are forgotten with the process. */
  private readonly monitorRoleMade = new Set<string>();
  /** Per claim and size asked (uid/size), the apiserver's refusal to grow it, and when. */
  private readonly resizeRefused = new Map<string, { message: string; at: number }>();
  /** Since when each member pod has been busy (Pending, starting or going away), by cluster uid, then pod uid. */
  private readonly busySince = new Map<string, Map<string, number>>();
  /** By cluster uid, the repository host pod this process last deleted: not used again, whatever the cache says. */
  private readonly repositoryHostGone = new Map<string, string>();
  /** Each cluster's uid, by key: what is remembered of a cluster is dropped once it is deleted or made again. */
  private readonly uidsSeen = new UidsSeen();

  constructor(private readonly ctx: OperatorContext, private readonly agentImage: string,
    private readonly stuckAfterMs: number, switchoverOnDrain: boolean) {
    const informer = <T extends KubeObject>(type: typeof types.pods) =>
      ctx.cache.informer<T>(type, ctx.namespace, ctx.client, ownedView);
    this.clusters = ctx.cache.informer<PostgresClusterResource>(clusterType, ctx.namespace, ctx.client);
    this.pods = informer<Pod>(types.pods);
    this.claims = informer<KubeObject>(types.persistentVolumeClaims);
    this.services = informer<KubeObject>(types.services);
    this.disruptionBudgets = informer<KubeObject>(types.podDisruptionBudgets);
    this.configMaps = informer<KubeObject>(types.configMaps);
    this.cronJobs = informer<KubeObject>(types.cronJobs);
    this.serviceAccounts = informer<KubeObject>(types.serviceAccounts);
    this.roles = informer<KubeObject>(types.roles);
    this.roleBindings = informer<KubeObject>(types.roleBindings);
    this.nodes = switchoverOnDrain ? ctx.cache.informer<KubeObject>(types.nodes, undefined, ctx.client, nodeView) : undefined;
    registerClusterMetrics(ctx.metrics.registry, () => this.clusters.list());
    this.configurations = new MemberConfigurations({
      run: (namespace, pod, script) => this.run(namespace, pod, script),
      annotate: async (namespace, pod, annotations) => {
        await this.ctx.client.patch(types.pods, namespace, pod, { metadata: { annotations } }, 'merge');
      },
      store: async (cluster, config) => {
        const desired = configurationMap(cluster, config);
        const result = await ensureOwned(this.ctx.client, types.configMaps, desired,
          this.configMaps.get(keyOf(desired.metadata)), (o) => isControlledBy(o, cluster));
        if (result.notOwned) throw new Error(`ConfigMap ${desired.metadata.name} is not this cluster's`);
      },
      record: (cluster, type, reason, note) => this.ctx.events.record(cluster, type, reason, note),
    });
    this.managedRoles = new ManagedRoles({
      secret: (namespace, name) => this.ctx.client.get(types.secrets, namespace, name),
      psql: (namespace, pod, input) => this.run(namespace, pod, 'psql -X -q -h /var/run/postgresql -U postgres ' +
        '-d postgres -f -', input),
      record: (cluster, type, reason, note) => this.ctx.events.record(cluster, type, reason, note),
    });
    const certificateDeps: TlsDeps = {
      secret: (namespace, name) => this.ctx.client.get(types.secrets, namespace, name),
      apply: async (cluster, desired) => {
        const { namespace, name } = desired.metadata;
        const type = desired.kind === 'Secret' ? types.secrets : types.configMaps;
        const current = desired.kind === 'Secret' ? await this.ctx.client.get(type, namespace, name)
          : this.configMaps.get(keyOf(desired.metadata));
        return !(await ensureOwned(this.ctx.client, type, desired, current, (o) => isControlledBy(o, cluster))).notOwned;
      },
      record: (cluster, type, reason, note) => this.ctx.events.record(cluster, type, reason, note),
      owned: (cluster, kind, name, fields) => ({ apiVersion: 'v1', kind, metadata: metadata(cluster, name), ...fields }),
    };
    this.certificates = new ServerCertificates(certificateDeps);
    this.backupPeers = new BackupPeers(certificateDeps);
    this.backups = new StoreBackups({
      run: (namespace, pod, script, container) => this.run(namespace, pod, script, undefined, container),
      pod: (namespace, name) => this.pods.get(keyOf({ namespace, name })),
      record: (cluster, type, reason, note) => this.ctx.events.record(cluster, type, reason, note),
    });
    this.upgrades = new MajorUpgrades({
      pod: (namespace, name) => this.pods.get(keyOf({ namespace, name })),
      run: (namespace, pod, script) => this.run(namespace, pod, script),
      memberPods: (cluster) => this.memberPods(cluster),
      // Made again when the cache does not show it yet: the one there is the same.
      create: async (pod) => {
        await this.ctx.client.create(types.pods, pod).catch((error: unknown) => {
          if (!(error instanceof ApiError && error.conflict)) throw error;
        });
      },
      deletePod: async (pod) => {
        await this.ctx.client.delete(types.pods, pod.metadata.namespace, pod.metadata.name, pod.metadata.uid);
      },
      record: (cluster, type, reason, note) => this.ctx.events.record(cluster, type, reason, note),
    });
  }

  async reconcile(request: Request, { log }: ReconcileContext): Promise<ReconcileResult> {
    const primary = readPrimary(this.clusters, request, PostgresCluster);
    const gone = this.uidsSeen.now(keyOf(request), primary?.object.metadata.uid);
    if (gone) this.forget(gone);
    if (!primary) return;
    const { object: cluster, problems } = primary;
    const generation = cluster.metadata.generation;
    const conditions: Pending[] = [];
    if (problems.length) {
      await this.report(cluster, {}, [{ type: 'Ready', status: 'False', reason: 'InvalidSpec', observedGeneration: generation,
        message: `${problems.join('; ')}; nothing was changed` }]);
      return;
    }
    // A higher major is an upgrade (upgrade.ts): until its data is upgraded, members keep the version, and the
    // image, they run; so they do after an upgrade that failed, or for a lower major.
    let spec: Spec = primary.spec;
    const current = cluster.status?.currentVersion;
    const runningImage = current ? this.runningImage(cluster, current) : undefined;
    const intent = upgradeIntent({ running: current, runningImage, asked: spec.version, askedImage: imageOf(spec),
      record: this.upgrades.latest(cluster), retry: retryOf(cluster),
      now: new Date() });
    if (['refused', 'upgrade', 'lower'].includes(intent.kind)) spec = { ...spec, version: current!, image: runningImage };
    if (intent.kind === 'done') spec = { ...spec, version: intent.record.to, image: intent.record.toImage ?? spec.image };
    let upgrade = intent.kind === 'upgrade' ? intent.record : undefined;

    // The shared objects are made or repaired, but a failure to is only reported: it must never hold up a failover.
    if (!spec.paused) conditions.push(await this.sharedCondition(cluster, spec));
    // Before any member is started: its pod mounts the certificate's Secret.
    const tls = spec.paused ? undefined : await this.certificates.follow(cluster, spec.tls, generation);
    if (tls) conditions.push(this.servingTls(cluster, tls.condition));
    // Before any member is started too, so that its backup server finds the certificate at once.
    const backupPeersReady = !spec.paused && spec.backup !== undefined && await this.backupPeersServe(cluster);
    const leaseObject = await this.ctx.client.get<Lease>(types.leases, request.namespace, names.lease(request.name));
    const foreignLease = leaseObject && !this.ours(cluster, leaseObject) ? leaseObject : undefined;
    if (leaseObject && !foreignLease) await this.keepOwnership(cluster, types.leases, leaseObject, deletesData(spec));
    const observed = this.observe(cluster, spec, foreignLease ? undefined : leaseObject);
    // What take() writes over: the Lease as the operator's own annotation left it.
    const currentLease = leaseObject && !foreignLease ? await this.publishFailsafeMembers(cluster, leaseObject) : leaseObject;
    const promoted = this.promotions.get(cluster.metadata.uid);
    if (promoted && observed.members.find((m) => m.name === promoted)?.pod?.role === 'primary') {
      this.promotions.delete(cluster.metadata.uid);
    }
    // A Lease of this name that is not the cluster's would name the primary to its agents: nothing is done by it.
    let step: Step = foreignLease
      ? { kind: 'wait', reason: `Lease ${foreignLease.metadata.name} is not this cluster's; nothing is changed until it ` +
        'is removed', requeueAfterMs: 30_000 }
      : this.promotions.has(cluster.metadata.uid)
        ? { kind: 'wait', reason: `waiting to see ${promoted} as primary`, requeueAfterMs: 1000 }
        : this.withCertificate(nextStep(observed), tls);
    let backupAsked: string | undefined;
    if (upgrade && !spec.paused && !foreignLease) {
      ({ record: upgrade, step, backupAsked } = await this.upgradeStep(cluster, primary.spec, upgrade, step, observed));
    }
    // Whatever the status says: no member pod is made while an upgrade pod may still use a member's volume.
    const upgrader = this.pods.get(keyOf({ namespace: request.namespace, name: names.majorUpgrade(request.name) }));
    if (upgrader && !['Succeeded', 'Failed'].includes(upgrader.status?.phase ?? '') && makesPod(step)) {
      step = { kind: 'wait', reason: `pod ${upgrader.metadata.name} runs pg_upgrade; no member starts meanwhile`,
        requeueAfterMs: 2000 };
    }
    if (step.kind !== 'wait' && step.kind !== 'steady' && step.kind !== 'paused') log.info({ step }, 'step');
    const outcome = await this.take(cluster, spec, observed, step, currentLease);
    const asked = this.switchoverAsked(cluster, observed.members, currentPrimary(observed)).status;
    if (asked?.phase === 'Failed' && cluster.status?.switchover?.phase !== 'Failed') {
      this.ctx.events.record(cluster, 'Warning', 'SwitchoverRefused', asked.message);
    }
    const primaryName = outcome.primary ?? currentPrimary(observed);
    const primaryPod = primaryName ? this.pods.get(keyOf({ namespace: request.namespace, name: primaryName })) : undefined;
    const podUp = primaryPod !== undefined && !primaryPod.metadata.deletionTimestamp && podReady(primaryPod);
    if (podUp && !spec.paused) {
      await this.restored(request.namespace!, primaryName!);
      await this.ensureMonitorRole(primaryPod, log);
    }
    // A primary not up yet has renewed nothing: its Lease speaks only of a primary that runs.
    const leaseExpired = podUp && !outcome.primary && observed.lease?.expired;
    conditions.push(outcome.waiting
      ? { type: 'PrimaryAvailable', status: 'False', reason: 'QuorumNotReached', observedGeneration: generation,
        message: `no member promoted: ${outcome.waiting}` }
      : podUp && !leaseExpired
        ? { type: 'PrimaryAvailable', status: 'True', reason: 'Ready', message: `${primaryName} takes writes`, observedGeneration: generation }
        : { type: 'PrimaryAvailable', status: 'False', reason: leaseExpired ? 'LeaseExpired' : 'Unavailable',
          observedGeneration: generation, message: !primaryName ? 'no primary yet' : leaseExpired
            ? `${primaryName} has not renewed the Lease ${names.lease(request.name)} for ${leaseDurationMs / 1000}s: ` +
              'its agent has stopped PostgreSQL, or cannot reach the apiserver' : `${primaryName} is not ready` });
    if (outcome.blocked) {
      this.ctx.events.record(cluster, 'Warning', 'NotOwned', outcome.blocked);
      // A member claim of another's is a shared object not owned too, named beside the others.
      const at = conditions.findIndex((c) => c.type === 'SharedObjectsReady');
      const others = at >= 0 && conditions[at]!.reason === 'NotOwned' ? `${conditions[at]!.message}; ` : '';
      conditions.splice(at >= 0 ? at : conditions.length, at >= 0 ? 1 : 0, { type: 'SharedObjectsReady', status: 'False',
        reason: 'NotOwned', message: `${others}${outcome.blocked}`, observedGeneration: generation });
    }
    conditions.push(...(outcome.blocked
      ? [{ type: 'Ready', status: 'False' as const, reason: 'NotOwned', message: outcome.blocked, observedGeneration: generation }]
      : this.readiness(outcome.waiting ? { kind: 'wait', reason: outcome.waiting } : step, observed, generation)));
    const repository = this.repositoryHost(cluster, spec, primaryPod);
    const archiving = this.archiving(cluster, spec, step, primaryPod, repository);
    if (archiving) conditions.push(archiving);
    // No backup starts before pgBackRest has made the stanza on this primary: stanza-create holds every lock, so
    // a backup begun beside it fails, and one before it has no stanza to go to.
    const stanzaMade = primaryPod !== undefined &&
      this.archiveChecks.get(cluster.metadata.uid)?.verifiedPod === primaryPod.metadata.uid;
    const backup = spec.paused ? {} : await this.backups.follow(cluster, spec, step.kind === 'steady' && stanzaMade, primaryPod,
      { timeline: this.archiveChecks.get(cluster.metadata.uid)?.timeline, asked: backupAsked,
        standby: this.backupStandby(cluster, spec, primaryPod, backupPeersReady),
        ...(repository ? { repositoryHost: repository } : {}) });
    if (!spec.paused) {
      conditions.push(await this.configurations.follow(cluster, spec.postgresql, this.memberPods(cluster), {
        mayApply: step.kind === 'steady' || (step.kind === 'wait' && step.rollStopped === true), size: spec.size,
        generation }));
    }
    const roles = spec.paused ? undefined : await this.managedRoles.follow(cluster, spec.roles ?? [], spec.databases ?? [],
      podUp && primaryPod.metadata.labels?.[roleLabel] === 'primary' ? primaryPod : undefined,
      step.kind === 'steady' || step.kind === 'wait', generation);
    if (roles) conditions.push(roles);
    const volumes = spec.paused ? undefined : await this.growVolumes(cluster, spec);
    if (volumes) conditions.push(volumes);
    const monitor = spec.paused ? { name: cluster.status?.podMonitor } : await syncPodMonitor(this.ctx, cluster,
      memberPodMonitor(cluster, spec), cluster.status?.podMonitor);
    if (monitor.condition) conditions.push(monitor.condition);
    let recorded = upgrade ?? ('record' in intent ? intent.record : undefined);
    if (recorded && podUp && !spec.paused) recorded = await this.upgrades.afterwards(cluster, recorded, primaryPod);
    const upgraded = majorUpgradeCondition(upgrade ? { kind: 'upgrade', record: upgrade }
      : 'record' in intent && recorded ? { ...intent, record: recorded } : intent, current, generation);
    if (upgraded) conditions.push(upgraded);
    const latest = outcome.updated ?? cluster;
    const summary = this.summary(latest, observed, step, outcome);
    await this.report(latest, { ...summary, ...backup, podMonitor: monitor.name, ...(tls?.status ? { tls: tls.status } : {}),
      ...(recorded ? { majorUpgrade: recorded } : {}),
      ...(upgrade?.phase === 'Stopping' || upgrade?.phase === 'Upgrading' ? { phase: 'Upgrading' as const }
        : upgrade?.phase === 'Halted' ? { phase: 'Failed' as const } : {}) },
      conditions, [...spec.backup ? [] : ['ContinuousArchiving'], ...spec.podMonitor ? [] : ['PodMonitor'],
        ...spec.roles?.length || spec.databases?.length ? [] : ['RolesApplied'], ...upgraded ? [] : ['MajorUpgrade'],
        'VersionChangeRefused']);
    this.upgrades.wrote(cluster, recorded);
    if (outcome.waiting) return { requeueAfterMs: 2000 };
    if (outcome.blocked) return { requeueAfterMs: 30_000 };
    if (step.kind === 'wait' && step.requeueAfterMs) return { requeueAfterMs: step.requeueAfterMs };
    return step.kind === 'paused' || step.kind === 'failed' ? undefined : { requeueAfterMs: steadyRequeueMs };
  }

  /**
   * An upgrade under way takes the cluster's step: pending, the plan's (with the version the members run) until the
   * cluster is steady and backed up, and the first step of the upgrade is only recorded; from then on, the upgrade's.
   */
  private async upgradeStep(cluster: Cluster, asked: Spec, record: MajorUpgradeStatus, planned: Step, observed: Observed):
  Promise<{ record: MajorUpgradeStatus; step: Step; backupAsked?: string }> {
    if (record.phase !== 'Pending') return this.upgrades.drive(cluster, asked, record);
    const next = pendingUpgrade({ record, step: planned, primary: currentPrimary(observed),
      backsUp: asked.backup !== undefined, backup: cluster.status?.scheduledBackup, now: new Date() });
    if (next.record.phase === 'Stopping') {
      this.ctx.events.record(cluster, 'Normal', 'MajorUpgradeStarted', next.record.message);
      return { record: next.record, step: { kind: 'wait', reason: next.record.message, requeueAfterMs: 1000 } };
    }
    if (next.record.phase === 'Failed') {
      this.ctx.events.record(cluster, 'Warning', 'MajorUpgradeFailed', next.record.message);
    }
    return { record: next.record, step: planned, ...next.backup ? { backupAsked: next.backup } : {} };
  }

  /** The clusters with a member pod on the node. */
  clustersOn(node: string): Request[] {
    const requests = new Map(this.pods.list().filter((p) => p.spec?.nodeName === node && p.metadata.labels?.[memberLabel])
      .map((p) => ({ namespace: p.metadata.namespace, name: p.metadata.labels![clusterLabel]! }))
      .map((request) => [keyOf(request), request]));
    return [...requests.values()];
  }

  /** Drops what this process remembers of a cluster gone (by uid), here and in each part that follows it. */
  private forget(uid: string): void {
    for (const memo of [this.promotions, this.leaseSeen, this.lostSince, this.archiveChecks, this.replacedAt,
      this.busySince, this.repositoryHostGone]) forgetUid(memo, uid);
    for (const part of [this.backups, this.configurations, this.managedRoles, this.certificates, this.backupPeers,
      this.upgrades]) part.forget(uid);
  }

  /** Whether members can take backups from a standby: a Warning says why not, and backups run on the primary. */
  private async backupPeersServe(cluster: Cluster): Promise<boolean> {
    const problem = await this.backupPeers.ensure(cluster)
      .catch((error: Error) => `Secret ${backupPeerSecret(cluster.metadata.name)}: ${error.message}`);
    if (problem) {
      this.ctx.events.record(cluster, 'Warning', 'BackupPeerUnavailable', `${problem.slice(0, 500)}: backups ` +
        'are taken on the primary until members have their pgBackRest certificate');
    }
    return problem === undefined;
  }

  /**
   * The replica a backup is taken from, if one can be (standby-backups.ts), with pgBackRest's options where it runs: on
   * the replica itself, or on the repository host.
   */
  private backupStandby(cluster: Cluster, spec: Spec, primary: Pod | undefined, peersReady: boolean): Standby | undefined {
    if (!spec.backup) return undefined;
    const replicas = this.memberPods(cluster).filter((pod) => pod.metadata.labels?.[roleLabel] === 'replica');
    const source = backupSource(spec, primary, replicas, peersReady, cluster.status?.synchronous?.standbys ?? []);
    if (!source?.standbyOf) return undefined;
    return { pod: source.pod, options: spec.backup.objectStore ? standbyOptions(cluster, source.standbyOf, memberLayout)
      : memberHostOptions(cluster, { primary: source.standbyOf, standby: source.pod.metadata.name }, memberLayout) };
  }

  /**
   * The repository host of a cluster that backs up into its volume, while it serves, with pgBackRest's options there
   * that reach the primary.
   */
  private repositoryHost(cluster: Cluster, spec: Spec, primary: Pod | undefined): RepositoryHost | undefined {
    if (!spec.backup || spec.backup.objectStore || !primary) return undefined;
    const pod = this.pods.get(keyOf({ namespace: cluster.metadata.namespace, name: repositoryHostName(cluster.metadata.name) }));
    // One this process deleted is still in the cache a moment: nothing is started in it.
    if (!pod || !isControlledBy(pod, cluster) || !repositoryHostServing(pod) ||
      this.repositoryHostGone.get(cluster.metadata.uid!) === pod.metadata.uid) return undefined;
    return { pod, options: memberHostOptions(cluster, { primary: primary.metadata.name }, memberLayout) };
  }

  /** Runs pgBackRest's `command` on the repository host, for the primary; throws while there is none serving. */
  private async onRepositoryHost(cluster: Cluster, repository: RepositoryHost | undefined, command: string):
  Promise<string> {
    if (!repository) throw new Error(`the repository host ${repositoryHostName(cluster.metadata.name)} is not serving`);
    return this.run(cluster.metadata.namespace!, repository.pod.metadata.name, `${command} ${repository.options}`,
      undefined, repositoryHostContainer);
  }

  /** A step that makes a member pod waits while the certificate Secret it mounts is not there, or not the cluster's. */
  private withCertificate(step: Step, tls: Followed | undefined): Step {
    return tls && !tls.ready && makesPod(step) ? { kind: 'wait', reason: `no member pod is made until the members' ` +
      `certificate is ready: ${tls.condition.message}`, requeueAfterMs: 10_000 } : step;
  }

  /** TLSReady as found, saying which members, made before members served TLS, serve none yet. */
  private servingTls(cluster: Cluster, condition: Pending): Pending {
    const plain = this.memberPods(cluster).filter((p) => p.metadata.annotations?.[tlsAnnotation] === undefined)
      .map((p) => p.metadata.name);
    return condition.status === 'True' && plain.length ? { ...condition, message: `${condition.message}; ` +
      `${plain.join(', ')}, made before members served TLS, serve${plain.length > 1 ? '' : 's'} none until made again ` +
      '(rolled when the cluster has other members; a lone member when its pod is deleted)' } : condition;
  }

  /**
   * The image a member runs `version` with: what a refused change must keep, also while no member runs (status says
   * what they ran).
   */
  private runningImage(cluster: Cluster, version: string): string | undefined {
    const pod = this.memberPods(cluster).find((p) => p.metadata.annotations?.[versionAnnotation] === version);
    return pod?.spec?.containers?.find((c) => c.name === 'postgres')?.image ??
      (cluster.status?.currentVersion === version ? cluster.status.currentImage : undefined);
  }

  /**
   * Whether `object` is this cluster's: controlled by it, or, for what a cluster of the same name may have left
   * behind (its volumes, Secret and Lease), labelled for it and controlled by nothing.
   */
  private ours(cluster: Cluster, object: KubeObject): boolean {
    return isControlledBy(object, cluster) ||
      (!controllerOf(object) && object.metadata.labels?.[clusterLabel] === cluster.metadata.name);
  }

  /** Puts or takes away the cluster's controller reference on an object that holds data, as the policy says. */
  private async keepOwnership(cluster: Cluster, type: ResourceType, object: KubeObject, controlled: boolean): Promise<void> {
    const ownerReferences = ownerReferencesFor(object, cluster, controlled);
    if (!ownerReferences) return;
    await this.ctx.client.patch(type, object.metadata.namespace, object.metadata.name, { metadata: { ownerReferences } }, 'merge');
  }

  private memberPods(cluster: Cluster): Pod[] {
    return this.pods.listNamespace(cluster.metadata.namespace!)
      .filter((p) => isControlledBy(p, cluster) && p.metadata.labels?.[memberLabel] !== undefined);
  }

  /**
   * Asks each bound member claim smaller than storage.size for it, and says how that goes (StorageResized). A
   * refusal is reported with an Event once, and asked again after resizeRetryMs; no failure here holds up the rest.
   */
  private async growVolumes(cluster: Cluster, spec: Spec): Promise<Pending | undefined> {
    const claims = (this.memberClaims(cluster) as Claim[])
      .filter((c) => !c.metadata.labels?.[retiredLabel] && !c.metadata.deletionTimestamp);
    if (!claims.length) return undefined;
    const size = String(spec.storage.size);
    // Refusals of sizes no longer asked for, or of claims gone, are forgotten.
    const current = new Set(claims.map((c) => `${c.metadata.uid}/${size}`));
    const uids = new Set(claims.map((c) => c.metadata.uid));
    for (const key of this.resizeRefused.keys()) {
      if (uids.has(key.slice(0, key.indexOf('/'))) && !current.has(key)) this.resizeRefused.delete(key);
    }
    const refused = new Map<string, string>();
    try {
      for (const claim of claimsToGrow(claims, size)) {
        const { name, uid } = claim.metadata;
        const key = `${uid}/${size}`;
        const earlier = this.resizeRefused.get(key);
        if (earlier && Date.now() - earlier.at < resizeRetryMs) {
          refused.set(name, earlier.message);
          continue;
        }
        try {
          await this.ctx.client.patch(types.persistentVolumeClaims, cluster.metadata.namespace, name,
            { spec: { resources: { requests: { storage: size } } } }, 'merge');
          this.resizeRefused.delete(key);
        } catch (error) {
          if (!(error instanceof ApiError && (error.forbidden || error.status === 422))) throw error;
          refused.set(name, error.message);
          if (!earlier) this.ctx.events.record(cluster, 'Warning', refusalReason(error.message), `${name}: ${error.message}`);
          this.resizeRefused.set(key, { message: error.message, at: Date.now() });
        }
      }
      return storageCondition(claims, size, refused, cluster.metadata.generation);
    } catch (error) {
      return { type: 'StorageResized', status: 'False', reason: 'ResizeFailed', observedGeneration:
        cluster.metadata.generation, message: `could not ask the member volumes for ${size}: ${(error as Error).message}` };
    }
  }

  private memberClaims(cluster: Cluster): KubeObject[] {
    return this.claims.listNamespace(cluster.metadata.namespace!)
      .filter((c) => this.ours(cluster, c) && c.metadata.labels?.[memberLabel] !== undefined);
  }

  private async sharedCondition(cluster: Cluster, spec: Spec): Promise<Pending> {
    const generation = cluster.metadata.generation;
    try {
      const notOwned = await this.ensureShared(cluster, spec);
      if (notOwned.length === 0) {
        return { type: 'SharedObjectsReady', status: 'True', reason: 'Applied', observedGeneration: generation,
          message: 'Secret, scripts, Services, agent identity and backups are as the spec says' };
      }
      const message = `${notOwned.join(', ')} already exist${notOwned.length === 1 ? 's' : ''} and belong${notOwned.length === 1
        ? 's' : ''} to something else: left unchanged; rename or remove ${notOwned.length === 1 ? 'it' : 'them'}`;
      this.ctx.events.record(cluster, 'Warning', 'NotOwned', message);
      return { type: 'SharedObjectsReady', status: 'False', reason: 'NotOwned', message, observedGeneration: generation };
    } catch (error) {
      this.ctx.events.record(cluster, 'Warning', 'ApplyFailed', (error as Error).message.slice(0, 1000));
      return { type: 'SharedObjectsReady', status: 'False', reason: 'ApplyFailed', message: (error as Error).message,
        observedGeneration: generation };
    }
  }

  /**
   * Makes or repairs, on every reconcile, the objects the cluster shares among its members, each tried whatever
   * became of the others: none that belongs to something else is changed, and those are returned by kind and name;
   * what failed is thrown together at the end.
   */
  private async ensureShared(cluster: Cluster, spec: Spec): Promise<string[]> {
    const ns = cluster.metadata.namespace!;
    const name = cluster.metadata.name;
    const cached = <T extends KubeObject>(informer: { get(key: string): T | undefined }, objectName: string) =>
      informer.get(keyOf({ namespace: ns, name: objectName }));
    const notOwned: string[] = [];
    const controlled = (object: KubeObject) => isControlledBy(object, cluster);
    const ensure = async (type: ResourceType, desired: KubeObject, current: KubeObject | undefined,
      ours: (o: KubeObject) => boolean = controlled) => {
      const result = await ensureOwned(this.ctx.client, type, desired, current, ours);
      if (result.notOwned) notOwned.push(`${type.kind} ${desired.metadata.name}`);
    };
    const { serviceAccount, role, roleBinding } = agentIdentity(cluster);
    const cronJob = cached(this.cronJobs, names.backups(name));
    const tasks: [what: string, task: () => Promise<unknown>][] = [
      ['the member agents\' ServiceAccount', () => ensure(types.serviceAccounts, serviceAccount,
        cached(this.serviceAccounts, serviceAccount.metadata.name))],
      ['the member agents\' Role', () => ensure(types.roles, role, cached(this.roles, role.metadata.name))],
      ['the member agents\' RoleBinding', () => ensure(types.roleBindings, roleBinding,
        cached(this.roleBindings, roleBinding.metadata.name))],
      ['the credentials', () => this.ensureCredentials(cluster, spec, notOwned)],
      ['the scripts', () => ensure(types.configMaps, scripts(cluster), cached(this.configMaps, names.scripts(name)))],
      ...services(cluster).map((service) => [`Service ${service.metadata.name}`, () => ensure(types.services, service,
        cached(this.services, service.metadata.name))] as [string, () => Promise<unknown>]),
      ['the PodDisruptionBudgets', async () => {
        const primaryReady = this.memberPods(cluster).some((p) => p.metadata.labels?.[roleLabel] === 'primary' &&
          !p.metadata.deletionTimestamp && podReady(p));
        const [replicas, primary] = disruptionBudgets(cluster, spec, { primaryReady,
          switchoverOnDrain: this.nodes !== undefined });
        const before = notOwned.length;
        await ensure(types.podDisruptionBudgets, replicas!, cached(this.disruptionBudgets, replicas!.metadata.name));
        // Only once the replicas' budget selects replicas alone (one made before selected every member): a pod two
        // budgets select cannot be evicted at all, and a drain gives up on it.
        if (notOwned.length === before) {
          await ensure(types.podDisruptionBudgets, primary!, cached(this.disruptionBudgets, primary!.metadata.name));
        }
      }],
      ['the member volumes\' owner', async () => {
        for (const claim of this.memberClaims(cluster)) {
          await this.keepOwnership(cluster, types.persistentVolumeClaims, claim, deletesData(spec));
        }
      }],
      ['the backups', async () => {
        // With an object store, pgBackRest takes the backups there: no volume, no repository host.
        if (spec.backup && !spec.backup.objectStore) {
          const current = cached(this.claims, names.backups(name)) as Claim | undefined;
          await ensure(types.persistentVolumeClaims, backupClaim(cluster, spec,
            current?.spec?.resources?.requests?.storage), current, (o) => this.ours(cluster, o));
          // Made controlled by the cluster before there was a retention policy: let go of it.
          if (current && isControlledBy(current, cluster)) {
            await this.keepOwnership(cluster, types.persistentVolumeClaims, current, false);
          }
        }
        await this.keepRepositoryHost(cluster, spec, notOwned);
        // The CronJob of pg_basebackup that filled the volume before pgBackRest did.
        if (cronJob && isControlledBy(cronJob, cluster)) {
          await this.ctx.client.delete(types.cronJobs, ns, cronJob.metadata.name, cronJob.metadata.uid);
        }
      }],
    ];
    const failures: string[] = [];
    for (const [what, task] of tasks) {
      await task().catch((error: Error) => failures.push(`${what}: ${error.message}`));
    }
    if (failures.length) throw new Error(failures.join('; '));
    return notOwned;
  }

  /**
   * Keeps the repository host's pod while the cluster backs up into its volume: made when missing; made again when it
   * ended, or when it is made otherwise (its image follows the primary's: pgBackRest speaks only to its own version),
   * though never while a backup runs in it; force-deleted once it has been going away for stuckAfterMs (its node is
   * gone: its volume holds all it has); deleted when no longer needed.
   */
  private async keepRepositoryHost(cluster: Cluster, spec: Spec, notOwned: string[]): Promise<void> {
    const ns = cluster.metadata.namespace!;
    const name = repositoryHostName(cluster.metadata.name);
    const current = this.pods.get(keyOf({ namespace: ns, name }));
    if (current && !isControlledBy(current, cluster)) {
      notOwned.push(`Pod ${name}`);
      return;
    }
    const wanted = spec.backup !== undefined && !spec.backup.objectStore;
    const primary = this.memberPods(cluster).find((pod) => pod.metadata.labels?.[roleLabel] === 'primary');
    const image = primary?.spec?.containers?.find((c) => c.name === 'postgres')?.image ??
      current?.spec?.containers?.[0]?.image ?? imageOf(spec);
    const replace = () => {
      this.repositoryHostGone.set(cluster.metadata.uid!, current!.metadata.uid!);
      return this.ctx.client.delete(types.pods, ns, name, current!.metadata.uid);
    };
    if (current?.metadata.deletionTimestamp) {
      const goneFor = Date.now() - Date.parse(current.metadata.deletionTimestamp);
      if (goneFor > this.stuckAfterMs) await this.ctx.client.delete(types.pods, ns, name, current.metadata.uid, 0);
    } else if (current && !wanted) {
      await replace();
    } else if (!current && wanted) {
      await this.ctx.client.create(types.pods, repositoryHost(cluster, spec, image)).catch((error: unknown) => {
        if (!(error instanceof ApiError && error.conflict)) throw error;
      });
    } else if (current) {
      const revision = repositoryHost(cluster, spec, image).metadata.annotations?.[repositoryRevisionAnnotation];
      const ended = current.status?.phase === 'Failed' || current.status?.phase === 'Succeeded';
      if (ended || (current.metadata.annotations?.[repositoryRevisionAnnotation] !== revision &&
        !this.backups.runsOn(cluster, name))) await replace();
    }
  }

  /**
   * The credentials Secret, read live (nothing caches Secrets): made for a cluster with no data yet; made again,
   * if deleted, with the passwords PostgreSQL has, which a running member's environment holds, or, with no member
   * running, with new ones the primary takes on as it starts; never rewritten.
   */
  private async ensureCredentials(cluster: Cluster, spec: Spec, notOwned: string[]): Promise<void> {
    const ns = cluster.metadata.namespace!;
    const name = names.credentials(cluster.metadata.name);
    const existing = await this.ctx.client.get(types.secrets, ns, name);
    if (existing) {
      if (this.ours(cluster, existing)) await this.keepOwnership(cluster, types.secrets, existing, deletesData(spec));
      else notOwned.push(`Secret ${name}`);
      return;
    }
    if (this.memberClaims(cluster).length === 0) {
      await this.ctx.client.create(types.secrets, credentials(cluster, spec));
      return;
    }
    // No member runs without it: nobody can say the old passwords, and nobody uses them. New ones are made, which
    // the primary sets in PostgreSQL as it starts.
    // Read live, not from the cache, which may not show yet a container just started with the old passwords.
    const live = await this.ctx.client.list<Pod>(types.pods, ns,
      { labelSelector: `${clusterLabel}=${cluster.metadata.name},${memberLabel}` });
    if (!live.items.some((p) => isControlledBy(p, cluster) && postgresRuns(p))) {
      await this.ctx.client.create(types.secrets, credentials(cluster, spec));
      this.ctx.events.record(cluster, 'Warning', 'CredentialsReset', `Secret ${name} was deleted while no member ` +
        'ran: made again with new passwords, which the primary sets in PostgreSQL as it starts');
      return;
    }
    const passwords = await this.passwordsInUse(cluster);
    await this.ctx.client.create(types.secrets, credentials(cluster, spec, passwords));
    this.ctx.events.record(cluster, 'Warning', 'CredentialsRestored', `Secret ${name} was deleted: made again ` +
      'with the passwords the members run with');
  }

  /** The passwords the members were started with, from the environment of one that runs, the primary first. */
  private async passwordsInUse(cluster: Cluster): Promise<{ postgres: string; replication: string }> {
    const running = this.memberPods(cluster).filter(postgresRuns)
      .sort((a, b) => Number(b.metadata.labels?.[roleLabel] === 'primary') - Number(a.metadata.labels?.[roleLabel] === 'primary'));
    for (const pod of running) {
      const output = await this.run(pod.metadata.namespace!, pod.metadata.name,
        'printf "%s\\n%s\\n" "$POSTGRES_PASSWORD" "$REPLICATION_PASSWORD"').catch(() => '');
      const [postgres, replication] = output.split('\n');
      if (postgres && replication) return { postgres, replication };
    }
    throw new Error(`Secret ${names.credentials(cluster.metadata.name)} was deleted and no running member could say ` +
      'the passwords it has; it is made again once one can (a new password would lock the members out)');
  }

  private observe(cluster: Cluster, spec: Spec, leaseObject: Lease | undefined): Observed {
    const ns = cluster.metadata.namespace!;
    const claims = this.memberClaims(cluster);
    const live = claims.filter((c) => !c.metadata.labels?.[retiredLabel]);
    const pods = this.memberPods(cluster);
    const members: Member[] = live.map((claim) => {
      const name = claim.metadata.name;
      const pod = pods.find((p) => p.metadata.name === name);
      return { name, index: indexOf(name), claim: true, claimDeleting: Boolean(claim.metadata.deletionTimestamp),
        ...(pod ? { pod: {
          phase: (pod.status?.phase ?? 'Pending') as MemberPod['phase'], ready: podReady(pod),
          role: (pod.metadata.labels?.[roleLabel] ?? 'replica') as Role,
          version: pod.metadata.annotations?.[versionAnnotation] ?? '',
          revision: pod.metadata.annotations?.[revisionAnnotation] ?? '', deleting: Boolean(pod.metadata.deletionTimestamp),
          tls: pod.metadata.annotations?.[tlsAnnotation] ?? '',
          ...(pod.metadata.annotations?.[restartPendingAnnotation]
            ? { restartPending: pod.metadata.annotations[restartPendingAnnotation] } : {}),
          unschedulable: pod.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False' &&
            c.reason === 'Unschedulable') ?? false,
          noData: pod.status?.containerStatuses?.some((c) => c.name === 'postgres' &&
            (c.state?.terminated ?? c.lastState?.terminated)?.exitCode === noDataExitCode) ?? false,
          cordoned: pod.spec?.nodeName !== undefined && cordoned(this.nodes?.get(pod.spec.nodeName)) } } : {}) };
    });
    this.timeBusy(cluster.metadata.uid, pods, members);
    const lease = this.leaseState(cluster, leaseObject);
    // Pods of a cluster of the same name deleted before this one was made, which its garbage collection still removes.
    const leftBehind = this.pods.listNamespace(ns).filter((p) => p.metadata.labels?.[clusterLabel] === cluster.metadata.name &&
      !isControlledBy(p, cluster) && p.metadata.labels?.[memberLabel] !== undefined);
    const uid = cluster.metadata.uid;
    const primary = currentPrimary({ members, primary: cluster.status?.primary, lease });
    if (primaryUp({ members, primary: cluster.status?.primary, lease })) this.lostSince.delete(uid);
    else if (this.lostSince.get(uid)?.primary !== primary) this.lostSince.set(uid, { primary, at: performance.now() });
    const since = this.lostSince.get(uid)?.at;
    const recorded = cluster.status?.synchronous;
    const switchoverTo = this.switchoverAsked(cluster, members, primary).to;
    return {
      lease,
      synchronousReplicas: spec.synchronousReplicas,
      synchronous: recorded && { ...recorded, standbys: recorded.standbys ?? [] },
      cluster: cluster.metadata.name, size: spec.size, version: spec.version, revision: archiveRevision(cluster, spec),
      tls: replicationSslMode(pods),
      paused: spec.paused,
      keepVolumeOnScaleDown: spec.storage.keepOnScaleDown, members,
      nextIndex: Math.max(-1, ...claims.map((c) => indexOf(c.metadata.name))) + 1,
      strangers: pods.filter((p) => !live.some((c) => c.metadata.name === p.metadata.name) && !p.metadata.deletionTimestamp)
        .map((p) => p.metadata.name),
      terminating: [...pods.map((p) => ['pod', p] as const), ...claims.map((c) => ['claim', c] as const),
        ...leftBehind.map((p) => ['pod', p] as const)]
        .filter(([, o]) => o.metadata.deletionTimestamp || leftBehind.includes(o as Pod))
        .map(([what, o]) => `${what} ${o.metadata.name}`),
      primary: cluster.status?.primary,
      primaryLostForMs: since === undefined ? 0 : performance.now() - since,
      stuckAfterMs: this.stuckAfterMs,
      ...(this.replacedAt.has(uid) ? { lastReplacedMsAgo: performance.now() - this.replacedAt.get(uid)! } : {}),
      // Only a backup pgBackRest made counts; the repository itself only the member reads, and it says what is missing.
      backupAvailable: cluster.status?.bootstrapped ? spec.backup !== undefined && cluster.status.lastBackup?.type !== undefined
        : spec.bootstrap?.recovery !== undefined || this.backupOf(cluster, spec) !== undefined,
      bootstrapFromBackup: spec.bootstrap !== undefined,
      ...(switchoverTo ? { switchoverTo } : {}),
    };
  }

  private switchoverAsked(cluster: Cluster, members: Member[], primary: string | undefined): SwitchoverRequest {
    return switchoverRequest(cluster.metadata.annotations?.[switchoverAnnotation], cluster.status?.switchover, members, primary);
  }

  /** Sets how long each member's pod has been busy, as this process saw it. */
  private timeBusy(uid: string, pods: Pod[], members: Member[]): void {
    const previous = this.busySince.get(uid) ?? new Map<string, number>();
    const now = performance.now();
    const since = new Map<string, number>();
    for (const member of members) {
      const pod = pods.find((p) => p.metadata.name === member.name);
      if (!pod || !member.pod || (member.pod.ready && !member.pod.deleting && member.pod.phase === 'Running')) continue;
      const at = previous.get(pod.metadata.uid!) ?? now;
      since.set(pod.metadata.uid!, at);
      member.pod.busyForMs = now - at;
    }
    this.busySince.set(uid, since);
  }

  /**
   * Writes into the Lease where each member's agent answers failsafe calls (the members whose pods run), so the
   * primary's agent knows whom to ask when the apiserver is out of reach. The operator's own write is no renewal.
   */
  private async publishFailsafeMembers(cluster: Cluster, object: Lease): Promise<Lease> {
    const addresses = Object.fromEntries(this.memberPods(cluster)
      .filter((p) => p.status?.podIP && p.status.phase === 'Running' && !p.metadata.deletionTimestamp)
      .map((p) => [p.metadata.name, `${p.status!.podIP}:${failsafePort}`] as const).sort(([a], [b]) => a.localeCompare(b)));
    const members = JSON.stringify(addresses);
    if (object.metadata.annotations?.[failsafeMembersAnnotation] === members) return object;
    const updated = await this.ctx.client.patch<Lease>(types.leases, object.metadata.namespace, object.metadata.name,
      { metadata: { annotations: { [failsafeMembersAnnotation]: members } } }, 'merge');
    // A renewal that landed since the plan read the Lease is not carried over: a write made from what the plan saw
    // then fails on the older version, and the next reconcile sees the renewal.
    if (JSON.stringify(updated.spec) !== JSON.stringify(object.spec)) return object;
    const seen = this.leaseSeen.get(cluster.metadata.uid);
    if (seen && seen.version === object.metadata.resourceVersion) {
      this.leaseSeen.set(cluster.metadata.uid, { ...seen, version: updated.metadata.resourceVersion! });
    }
    return updated;
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
    const peers = object.metadata.annotations?.[failsafePeersAnnotation];
    const failsafePeers = (() => { try { return peers ? JSON.parse(peers) as string[] : undefined; } catch { return []; } })();
    return { holder, expired: performance.now() - at >= leaseDurationMs, ...(failsafePeers ? { failsafePeers } : {}) };
  }

  /** The cluster whose backups a restore reads: the bootstrap source, else the cluster itself once it has one. */
  private backupOf(cluster: Cluster, spec: Spec): { cluster: string; backup?: string } | undefined {
    const source = spec.bootstrap?.fromBackup;
    if (source && !cluster.status?.bootstrapped) {
      const other = this.clusters.get(keyOf({ namespace: cluster.metadata.namespace, name: source.cluster }));
      // A backup pgBackRest made into that cluster's volume: not one in an object store, nor one of pg_basebackup's.
      const inVolume = other?.spec.backup !== undefined && !other.spec.backup.objectStore &&
        other.status?.lastBackup?.type !== undefined;
      return inVolume ? { cluster: source.cluster, backup: source.backup } : undefined;
    }
    return cluster.status?.lastBackup ? { cluster: cluster.metadata.name } : undefined;
  }

  private async take(cluster: Cluster, spec: Spec, observed: Observed, step: Step, leaseObject: Lease | undefined):
  Promise<Outcome> {
    const ns = cluster.metadata.namespace!;
    const event = (type: 'Normal' | 'Warning', reason: string, note: string) => this.ctx.events.record(cluster, type, reason, note);
    // WAL is kept in shares of the volumes there are: storage.size may be more than they have yet, or ever.
    const bytes = (quantity: string | number | undefined) => { try { return bytesOf(quantity ?? spec.storage.size); } catch { return Infinity; } };
    const held = this.memberClaims(cluster).filter((c) => !c.metadata.labels?.[retiredLabel])
      .map((c) => bytes((c as Claim).status?.capacity?.storage));
    const least = Math.min(bytes(spec.storage.size), ...held);
    const sized = Number.isFinite(least) ? { ...spec, storage: { ...spec.storage, size: least } } : spec;
    const startPod = (member: string, role: Role, restore = false) => this.ctx.client.create(types.pods,
      memberPod(cluster, sized, member, { role, agentImage: this.agentImage,
        replicationSslMode: observed.tls as ReplicationSslMode, ...(restore ? { restoreFrom: this.backupOf(cluster, spec) } : {}) }));
    // A cluster made before it had a Lease gets one naming the primary it has.
    if (!leaseObject && observed.members.length) {
      await this.ctx.client.create(types.leases, lease(cluster, spec, currentPrimary(observed)!));
    }
    switch (step.kind) {
      case 'create-seed':
        if (!(await this.claimMember(cluster, spec, step.member, step.restore))) return { blocked: claimTaken(step.member) };
        // No member is left to hold the Lease, so it is the seed's.
        await this.takeLease(cluster, spec, leaseObject, step.member);
        await startPod(step.member, 'primary', step.restore);
        event('Normal', step.restore ? 'Restoring' : 'MemberAdded', !step.restore ? `Added seed member ${step.member}`
          : spec.backup && cluster.status?.bootstrapped ? `Recovering seed member ${step.member} from the ` +
            'cluster\'s own archive, all of it'
            : spec.bootstrap?.recovery ? `Recovering seed member ${step.member} from ${spec.bootstrap.recovery.source}'s ` +
              `archive${recoveryTarget(spec.bootstrap.recovery)}` : `Restoring seed member ${step.member} from the latest backup`);
        return { primary: step.member };
      case 'failed':
        event('Warning', step.reason, step.message);
        return {};
      case 'remove-stranger':
        return this.removeStranger(cluster, step.pod);
      case 'delete-pod':
        await this.ctx.client.delete(types.pods, ns, step.member);
        event('Normal', 'MemberReplacing', `Deleted the pod of member ${step.member} (${step.reason})` +
          (step.reason === 'its volume is being deleted' ? '' : '; it comes back on its volume'));
        return {};
      case 'start-member': {
        // The cache may not show yet that the claim is going away; a pod started on it now would come up on an
        // empty volume once the claim is recreated under the same name.
        const claim = await this.ctx.client.get(types.persistentVolumeClaims, ns, step.member);
        if (!claim || claim.metadata.deletionTimestamp) return {};
        // Its pod gone and nobody promoted in its place, a primary the Lease was released from gets it back.
        // A seed that has not served yet restores again; with nothing to restore from (the backup gone), it waits,
        // as initdb would make an empty cluster.
        const restoring = step.role === 'primary' && claim.metadata.annotations?.[restoringAnnotation] === 'true';
        if (restoring && !spec.backup?.objectStore && !this.backupOf(cluster, spec)) {
          return { waiting: `seed ${step.member} is to restore a backup, and none is there to restore` };
        }
        if (step.role === 'primary') await this.takeLeaseFromGone(cluster, spec, step.member);
        await startPod(step.member, step.role, restoring);
        event('Normal', 'MemberReplaced', `Started member ${step.member} as ${step.role} on its volume`);
        return {};
      }
      case 'add-member':
        if (!(await this.claimMember(cluster, spec, step.member))) return { blocked: claimTaken(step.member) };
        await startPod(step.member, 'replica');
        event('Normal', 'MemberAdded', `Added member ${step.member} as a replica`);
        return {};
      case 'remove-member':
      case 'replace-member': {
        await this.ctx.client.delete(types.pods, ns, step.member);
        if (step.deleteClaim) await this.ctx.client.delete(types.persistentVolumeClaims, ns, step.member);
        else {
          await this.ctx.client.patch(types.persistentVolumeClaims, ns, step.member,
            { metadata: { labels: { [retiredLabel]: 'true' } } }, 'merge');
        }
        const volume = step.deleteClaim ? ' and its volume' : '; its volume is kept';
        if (step.kind === 'replace-member') this.replacedAt.set(cluster.metadata.uid, performance.now());
        await (step.kind === 'remove-member'
          ? event('Normal', 'MemberRemoved', `Removed member ${step.member}${volume}`)
          : event('Warning', 'StuckMemberReplaced', `Removed member ${step.member} (${step.reason})${volume}; a new member ` +
            'takes its place'));
        return {};
      }
      case 'upgrade-member': {
        await this.ctx.client.delete(types.pods, ns, step.member);
        const member = observed.members.find((m) => m.name === step.member)?.pod;
        const pending = member?.restartPending;
        event('Normal', 'MemberUpgrading', `Restarting member ${step.member} on PostgreSQL ${spec.version}` +
          (archiveRevision(cluster, spec) ? ', archiving with pgBackRest' : '') +
          (pending ? `, to apply ${pending.replaceAll(',', ', ')}` : '') +
          (member && member.tls !== observed.tls ? `, serving TLS and streaming with sslmode=${observed.tls}` : ''));
        return {};
      }
      case 'switchover':
      case 'failover':
        return this.replacePrimary(cluster, spec, observed, step, leaseObject);
      case 'finish-promotion': {
        const synchronous = { ...wantedSynchronous(observed, step.member), slots: wantedSlots(observed, step.member) };
        await this.promote(ns, step.member, synchronous);
        this.promotions.set(cluster.metadata.uid, step.member);
        const updated = await this.recordSynchronous(cluster, synchronous);
        event('Normal', 'Promoted', `Finished promoting ${step.member}, which the Lease names; ${commitsWait(synchronous)}`);
        return { primary: step.member, synchronous, updated };
      }
      case 'release-lease':
        await this.takeLease(cluster, spec, leaseObject, `${step.from}${releasedSuffix}`);
        event('Warning', 'LeaseReleased', `The Lease no longer names ${step.from}, whose pod may still run: no ` +
          `member vouches for it any more, and one is promoted once the Lease has gone unrenewed for ` +
          `${leaseDurationMs / 1000}s again`);
        return {};
      case 'fence-primary':
        await this.ctx.client.delete(types.pods, ns, step.member);
        event('Warning', 'MultiplePrimaries', `Pod ${step.member} is labelled primary, but the Lease names ` +
          `${step.holder}: its agent stops PostgreSQL, and its pod was deleted to come back as a replica`);
        return {};
      case 'set-synchronous':
        return this.setSynchronous(cluster, observed, step);
      default:
        return {};
    }
  }

  /** A seed restored and serving: a pod made again for it from now on starts on its data. */
  private async restored(namespace: string, member: string): Promise<void> {
    const claim = this.claims.get(keyOf({ namespace, name: member }));
    if (claim?.metadata.annotations?.[restoringAnnotation] === undefined) return;
    await this.ctx.client.patch(types.persistentVolumeClaims, namespace, member,
      { metadata: { annotations: { [restoringAnnotation]: null } } }, 'merge');
  }

  /** Makes the member's claim, or finds it there already as this cluster's; false when another's has its name. */
  private async claimMember(cluster: Cluster, spec: Spec, member: string, restoring = false): Promise<boolean> {
    const result = await ensureOwned(this.ctx.client, types.persistentVolumeClaims, memberClaim(cluster, spec, member, restoring),
      undefined, (claim) => this.ours(cluster, claim));
    return !result.notOwned;
  }

  /**
   * A pod of the cluster whose member claim is not seen: if a claim of its name is there (someone took its labels
   * off), the claim is labelled again and the pod kept; only a pod with no claim at all is deleted.
   */
  private async removeStranger(cluster: Cluster, pod: string): Promise<Outcome> {
    const ns = cluster.metadata.namespace!;
    const claim = await this.ctx.client.get(types.persistentVolumeClaims, ns, pod);
    if (claim && !claim.metadata.deletionTimestamp && (isControlledBy(claim, cluster) || !controllerOf(claim))) {
      await this.ctx.client.patch(types.persistentVolumeClaims, ns, pod,
        { metadata: { labels: { [clusterLabel]: cluster.metadata.name, ...memberLabels(pod) } } }, 'merge');
      this.ctx.events.record(cluster, 'Warning', 'VolumeRelabelled', `PersistentVolumeClaim ${pod} had lost the ` +
        'labels that make it a member\'s volume: labelled again, and its member kept');
      return {};
    }
    await this.ctx.client.delete(types.pods, ns, pod);
    this.ctx.events.record(cluster, 'Normal', 'StrangerRemoved', `Deleted pod ${pod}: it is no member of the cluster`);
    return {};
  }

  /**
   * Failover and switchover: the candidates say how far their WAL goes, and one is promoted only when enough of the
   * old primary's synchronous standbys answered to be sure it has every acknowledged commit. Its own synchronous
   * standbys (those that answered, which stream) are set before it takes writes.
   */
  private async replacePrimary(cluster: Cluster, spec: Spec, observed: Observed,
    step: Extract<Step, { kind: 'failover' | 'switchover' }>, leaseObject: Lease | undefined): Promise<Outcome> {
    const ns = cluster.metadata.namespace!;
    // A failover takes the Lease at the version the plan saw unrenewed (a renewal since fails the write); a
    // switchover takes it once the old primary's pod is gone, its agent with it.
    // One asked for is recorded as under way first: cut short, it is not taken up again to stop the next primary.
    // Only the annotation's is asked for: status.switchover is its record.
    const asked = step.kind === 'switchover' && step.asked ? step.to : undefined;
    const marked = asked ? await this.ctx.client.patch<Cluster>(clusterType, ns,
      cluster.metadata.name, { status: { switchover: { to: asked, phase: 'Running',
        message: `stopping ${step.from} to promote ${asked}` } } }, 'merge', 'status') : undefined;
    if (step.kind === 'switchover') await this.stopPrimary(ns, step.from);
    const { positions, unanswered } = await this.positions(ns, step.candidates);
    const voters = votersAfter(observed, step.from);
    const gone = voters.standbys.filter((s) => !observed.members.some((m) => m.name === s));
    const decision = choosePromotion(positions, voters, gone);
    const silent = unanswered.length ? ` (not answering: ${unanswered.join('; ')})` : '';
    // A switchover asked for that stopped the primary for nothing is not asked again.
    if ('waiting' in decision) {
      return { waiting: `${decision.waiting}${silent}`, ...(asked ? { switchover:
        { to: asked, phase: 'Failed', message: `no member promoted after the primary stopped: ${decision.waiting}` },
        ...(marked ? { updated: { ...marked, apiVersion: cluster.apiVersion, kind: cluster.kind } } : {}) } : {}) };
    }
    // The member named, if its WAL goes as far as the furthest: a clean stop sent the last of it to every replica
    // that streamed.
    const lsnOf = (member: string | undefined) => positions.find((p) => p.member === member)?.lsn;
    const named = step.kind === 'switchover' ? step.to : undefined;
    const chosen = named !== undefined && lsnOf(named) === lsnOf(decision.chosen) ? named : decision.chosen;
    const synchronous = { ...wantedSynchronous(observed, chosen, positions.map((p) => p.member)),
      slots: wantedSlots(observed, chosen) };
    if (step.kind === 'failover') await this.takeLease(cluster, spec, leaseObject, chosen);
    else await this.takeLeaseFromGone(cluster, spec, chosen);
    await this.promote(ns, chosen, synchronous);
    this.promotions.set(cluster.metadata.uid, chosen);
    // Recorded only once promoted: until then, a failover in its place asks every member (votersAfter).
    const updated = await this.recordSynchronous(cluster, synchronous);
    this.ctx.events.record(cluster, step.kind === 'failover' ? 'Warning' : 'Normal', 'Promoted', `Promoted ${chosen} ` +
      `to primary in place of ${step.from} (${step.kind}${asked === chosen ? ' asked for' : ''}` +
      `${step.kind === 'switchover' && step.drain ? ' off a cordoned node' : ''}: the replica whose WAL ` +
      `goes furthest among ${step.candidates.join(', ')}${silent}); ${commitsWait(synchronous)}`);
    const answered: SwitchoverStatus | undefined = asked === undefined ? undefined : asked === chosen
      ? { to: asked, phase: 'Completed', message: `${asked} promoted in place of ${step.from}` }
      : { to: asked, phase: 'Failed', message: `${decision.chosen} was promoted instead: ${asked}'s WAL did not go as ` +
        `far${lsnOf(asked) === undefined ? ' (it did not answer)' : ''}` };
    if (answered && asked !== chosen) this.ctx.events.record(cluster, 'Warning', 'SwitchoverFailed', answered.message);
    return { primary: chosen, synchronous, updated, ...(answered ? { switchover: answered } : {}) };
  }

  /**
   * Changes the primary's synchronous standbys so that a failover always knows whom to ask: the set is recorded
   * (with any standby it drops) before it is applied, so no commit depends on a standby the record lacks; a standby
   * dropped is forgotten only once the ones kept have everything it may have confirmed.
   */
  private async setSynchronous(cluster: Cluster, observed: Observed, step: Extract<Step, { kind: 'set-synchronous' }>):
  Promise<Outcome> {
    const { synchronous, dropped } = step;
    const { slots: wantedSlotNames = [], ...standbys } = synchronous;
    const recorded = observed.synchronous;
    const changed = recorded?.primary !== synchronous.primary || recorded.quorum !== synchronous.quorum ||
      recorded.standbys.join() !== synchronous.standbys.join();
    // Slots made before they are recorded: the record names what the primary has, not what it was asked for.
    if (changed) await this.recordSynchronous(cluster, { ...standbys, standbys: [...standbys.standbys, ...dropped] });
    const catchUp = dropped.length && synchronous.quorum
      ? `CATCH_UP="${synchronous.standbys.map((s) => `'${s}'`).join(',')}"\nQUORUM=${synchronous.quorum}\n` : '';
    const output = await this.run(cluster.metadata.namespace!, step.member, `SYNCHRONOUS_STANDBY_NAMES=` +
      `'${synchronousStandbyNames(synchronous)}'\nSLOTS='${wantedSlotNames.join(' ')}'\n` +
      `SLOT_PATTERN='${slotPattern(cluster.metadata.name)}'\n${catchUp}${synchronousScript}`);
    const slots = output.split('\n').filter(Boolean);
    if (changed) {
      this.ctx.events.record(cluster, 'Normal', 'SynchronousStandbys', `On ${step.member}, ` +
        `${commitsWait(synchronous)}${dropped.length ? ` (no longer ${dropped.join(', ')})` : ''}`);
    }
    const inForce = { ...synchronous, slots };
    return { synchronous: inForce, updated: await this.recordSynchronous(cluster, inForce) };
  }

  /**
   * Writes the synchronous standbys in force into status at once, with no resourceVersion to go stale: a failover
   * must find them whatever becomes of the rest of this reconcile.
   */
  private async recordSynchronous(cluster: Cluster, synchronous: Synchronous): Promise<Cluster> {
    const updated = await this.ctx.client.patch<Cluster>(clusterType, cluster.metadata.namespace, cluster.metadata.name,
      { status: { primary: synchronous.primary, synchronous } }, 'merge', 'status');
    return { ...updated, apiVersion: cluster.apiVersion, kind: cluster.kind };
  }

  /** Names `holder` in the Lease: created if missing, else written over `current`'s resourceVersion. */
  private async takeLease(cluster: Cluster, spec: Spec, current: Lease | undefined, holder: string): Promise<void> {
    if (!current) {
      await this.ctx.client.create(types.leases, lease(cluster, spec, holder));
      return;
    }
    if (current.spec?.holderIdentity === holder) return;
    const now = microTime();
    // The members the old holder counted on are not a new one's (its agent writes its own with its first renewal);
    // released, they are still whom a failover may promote.
    const { [failsafePeersAnnotation]: peers, ...others } = current.metadata.annotations ?? {};
    const annotations = holder.endsWith(releasedSuffix) && peers ? { ...others, [failsafePeersAnnotation]: peers } : others;
    await this.ctx.client.update<Lease>(types.leases, { ...current, metadata: { ...current.metadata, annotations },
      spec: { ...current.spec, holderIdentity: holder,
      acquireTime: now, renewTime: now, leaseTransitions: (current.spec?.leaseTransitions ?? 0) + 1 } });
  }

  /** Takes the Lease from a holder whose pod is gone: nothing renews it any more, so it is read until a write holds. */
  private async takeLeaseFromGone(cluster: Cluster, spec: Spec, holder: string): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const current = await this.ctx.client.get<Lease>(types.leases, cluster.metadata.namespace!, names.lease(cluster.metadata.name));
      try {
        await this.takeLease(cluster, spec, current, holder);
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

  /**
   * Makes the member agents' role on a primary (metrics.ts) once per pod: a primary started by an older operator
   * lacks it. Metrics are not worth a failed reconcile: a failure is logged and tried again.
   */
  private async ensureMonitorRole(primary: Pod, log: Logger): Promise<void> {
    if (this.monitorRoleMade.has(primary.metadata.uid!)) return;
    try {
      await this.run(primary.metadata.namespace!, primary.metadata.name, monitorRoleScript);
      this.monitorRoleMade.add(primary.metadata.uid!);
    } catch (error) {
      log.warn({ err: error, pod: primary.metadata.name }, 'could not make the member agents\' role');
    }
  }

  private async run(namespace: string, pod: string, script: string, input?: string, container = 'postgres'):
  Promise<string> {
    const result = await this.ctx.client.exec(types.pods, { namespace, pod, container, command: ['sh', '-c', script],
      ...(input === undefined ? {} : { stdin: Buffer.from(input, 'utf8') }) });
    if (result.exitCode !== 0) throw new ScriptFailed(pod, result.exitCode, result.stderr);
    return result.stdout;
  }

  /** How far each candidate's WAL goes, among those that answer; one that does not never blocks the rest. */
  private async positions(namespace: string, candidates: string[]): Promise<{ positions: CandidatePosition[]; unanswered: string[] }> {
    const answers = await Promise.allSettled(candidates.map(async (member) =>
      ({ member, lsn: parsePosition(await this.run(namespace, member, positionScript)).lsn })));
    return {
      positions: answers.flatMap((a) => a.status === 'fulfilled' ? [a.value] : []),
      unanswered: answers.flatMap((a, i) => a.status === 'rejected' ? [`${candidates[i]}: ${(a.reason as Error).message}`] : []),
    };
  }

  /**
   * Promotes the member with its synchronous standbys set first (once: a promoted member only gets them set), then
   * points the read-write Service at it.
   */
  private async promote(namespace: string, member: string, synchronous: Synchronous): Promise<void> {
    await this.run(namespace, member, `SYNCHRONOUS_STANDBY_NAMES='${synchronousStandbyNames(synchronous)}'\n` +
      `SLOTS='${(synchronous.slots ?? []).join(' ')}'\n${promoteScript}`);
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

  private summary(cluster: Cluster, observed: Observed, step: Step, outcome: Outcome): Partial<PostgresClusterStatus> {
    const promoted = outcome.primary;
    const members = observed.members.map((m) => ({ name: m.name, role: m.name === promoted ? 'primary' as const : m.pod?.role ?? 'replica',
      ready: m.pod?.ready ?? false }));
    const versions = new Set(observed.members.map((m) => m.pod?.version).filter(Boolean));
    return {
      phase: phases[step.kind] ?? cluster.status?.phase ?? 'Creating',
      primary: promoted ?? currentPrimary(observed),
      readyMembers: members.filter((m) => m.ready).length,
      members,
      currentVersion: versions.size === 1 ? [...versions][0] : cluster.status?.currentVersion,
      currentImage: versions.size === 1 ? this.runningImage(cluster, [...versions][0]!) : cluster.status?.currentImage,
      switchover: outcome.switchover ?? this.switchoverAsked(cluster, observed.members, currentPrimary(observed)).status,
      ...(cluster.status?.bootstrapped || members.some((m) => m.role === 'primary' && m.ready) ? { bootstrapped: true } : {}),
      ...(outcome.synchronous ? { synchronous: outcome.synchronous } : {}),
    };
  }

  private async report(cluster: Cluster, status: Partial<PostgresClusterStatus>, conditions: Pending[],
    dropped: string[] = []): Promise<void> {
    await writeStatusWithConditions(this.ctx.client, clusterType, cluster,
      { ...status, observedGeneration: cluster.metadata.generation }, conditions, dropped);
  }

  /**
   * The ContinuousArchiving condition as last found. A fresh look is started, never waited for, while the cluster is
   * steady, at most every archiveCheckMs: a store that does not answer holds up no failover. On a primary not yet
   * seen archiving, pgBackRest first makes the stanza (tried again until it can), then one WAL switch is archived.
   * Into the backup volume, the repository host must serve first.
   */
  private archiving(cluster: Cluster, spec: Spec, step: Step, primary: Pod | undefined,
    repository: RepositoryHost | undefined): Pending | undefined {
    const uid = cluster.metadata.uid;
    if (!spec.backup) {
      this.archiveChecks.delete(uid);
      return undefined;
    }
    const last = this.archiveChecks.get(uid);
    const generation = cluster.metadata.generation;
    const restarting = primary?.metadata.annotations?.[revisionAnnotation] !== archiveRevision(cluster, spec);
    const shown = last?.condition ?? { type: 'ContinuousArchiving', status: 'False' as const, observedGeneration: generation,
      reason: restarting ? 'MembersRestarting' : 'NotCheckedYet', message: restarting
        ? 'the members restart, one at a time, to archive with the settings asked for' : 'archiving is checked once the cluster is steady' };
    if (step.kind !== 'steady' || !primary || !podReady(primary) || restarting || last?.running) return shown;
    if (last && last.pod === primary.metadata.uid && performance.now() - last.at < archiveCheckMs) return shown;
    const ns = cluster.metadata.namespace!;
    const name = primary.metadata.name;
    const verified = last?.verifiedPod === primary.metadata.uid;
    const entry = { ...last, pod: primary.metadata.uid!, at: performance.now(), condition: shown };
    entry.running = (async () => {
      let condition: Pending;
      try {
        if (!verified) {
          const stanza = (command: string) => `timeout ${archiveCheckMs / 1000} pgbackrest stanza-${command}`;
          if (spec.backup!.objectStore) {
            await this.run(ns, name, stanza('create'));
          } else {
            // On the repository host, which alone may; after a major upgrade the operator made, the stanza learns the
            // new version first (once done, it says so and changes nothing).
            if (cluster.status?.majorUpgrade?.phase === 'Completed') {
              await this.onRepositoryHost(cluster, repository, stanza('upgrade'));
            }
            await this.onRepositoryHost(cluster, repository, stanza('create'));
          }
          // One WAL switch per primary, not per look: an idle cluster shows at once that its archiving works.
          await this.run(ns, name, switchWalScript);
          entry.verifiedPod = primary.metadata.uid;
        }
        const stats = parseArchiverStats(await this.run(ns, name, archiverQuery));
        condition = archivingCondition(stats, name, generation);
        entry.timeline = stats.timeline;
      } catch (error) {
        condition = { type: 'ContinuousArchiving', status: 'False', reason: 'ArchiveCheckFailed', observedGeneration: generation,
          message: `pgBackRest on ${name}: ${(error as Error).message.slice(0, 600)}` };
      }
      if (condition.status === 'False' && condition.reason !== last?.condition?.reason) {
        this.ctx.events.record(cluster, 'Warning', condition.reason, condition.message);
      }
      entry.condition = condition;
      entry.at = performance.now();
      delete entry.running;
    })();
    this.archiveChecks.set(uid, entry);
    return shown;
  }
}


export const postgresClusterOperator: Operator<ControllerOptions> = {
  name: 'postgrescluster',
  permissions,
  setup(ctx) {
    const stuckAfterSeconds = Number(ctx.settings.postgresReplaceStuckAfter ?? 300);
    if (!(stuckAfterSeconds > 0)) {
      throw new Error(`--postgres-replace-stuck-after takes seconds, not "${ctx.settings.postgresReplaceStuckAfter}"`);
    }
    const switchoverOnDrain = (ctx.settings.postgresSwitchoverOnDrain ?? 'true') !== 'false';
    const reconciler = new PostgresClusterReconciler(ctx, ctx.settings.postgresAgentImage ?? releaseImage,
      stuckAfterSeconds * 1000, switchoverOnDrain);
    ctx.addController({
      name: 'postgrescluster',
      for: clusterType,
      owns: [types.pods, types.persistentVolumeClaims, types.services, types.podDisruptionBudgets, types.configMaps, types.cronJobs,
        types.serviceAccounts, types.roles, types.roleBindings].map((type) => ({ type, view: ownedView })),
      // A node cordoned: the clusters whose primary may run there (drain.ts).
      watches: switchoverOnDrain ? [{ type: types.nodes, view: nodeView, updateMatters: cordonChanged,
        map: (node) => reconciler.clustersOn(node.metadata.name) }] : [],
      workers: 2,
      reconcile: (request, context) => reconciler.reconcile(request, context),
    });
  },
};

