// A major version upgrade in place with pg_upgrade, asked for by raising spec.version's major (CEL refuses lowering
// it). As CloudNativePG runs one: every member is stopped, a pod on the primary's volume runs the new image's
// pg_upgrade with the old image's programs brought in beside it (an init container of the old image copies them,
// with the shared libraries the new image lacks, so a new Debian release can upgrade an old one's data), and the
// members start again on the new image, the replicas cloned afresh from the upgraded primary. Unlike it, a failure
// before pg_upgrade has linked any file (pg_upgrade --check first: what refuses an upgrade refuses it there) leaves
// the old data directory as it was, and the members start again on the old version by themselves; and with an object
// store a full backup is taken first, and another of the new version after.
import { isDeepStrictEqual } from 'node:util';
import type { Pod } from '../../runtime/core.ts';
import type { Owner } from '../../runtime/objects.ts';
import type { KubeObject } from '../../runtime/resources.ts';
import type { Condition } from '../../runtime/status.ts';
import { majorUpgradePod, names, versionAnnotation } from './objects.ts';
import { afterUpgradeScript, notWholeExitCode, untouchedExitCode } from './upgrade-scripts.ts';
import { majorOf, type Step } from './plan.ts';
import { ApiError } from '../../runtime/rest.ts';
import { majorUpgradeRetryAnnotation, type PostgresClusterResource, type PostgresClusterStatus } from './schema.ts';
import { forgetUid } from '../../runtime/memos.ts';

type Cluster = PostgresClusterResource & Owner;
type Spec = PostgresClusterResource['spec'];
type Pending = Omit<Condition, 'lastTransitionTime'>;
export type MajorUpgradeStatus = NonNullable<PostgresClusterStatus['majorUpgrade']>;

const stamp = (date: Date) => date.toISOString().replace(/\.\d+Z$/, 'Z');

/** What a PostgreSQL version asked for means to a cluster whose members run `running`. */
export type Intent =
  | { kind: 'none'; record?: MajorUpgradeStatus }
  /** A lower major than the members run (which CEL refuses): they stay on theirs. */
  | { kind: 'lower' }
  /** The upgrade to this version failed, and was not asked again: the members stay on the version they run. */
  | { kind: 'refused'; record: MajorUpgradeStatus }
  /** The data was upgraded: members are made of the spec as asked. */
  | { kind: 'done'; record: MajorUpgradeStatus }
  | { kind: 'upgrade'; record: MajorUpgradeStatus };

export interface IntentInput {
  running?: string;
  runningImage?: string;
  asked: string;
  askedImage: string;
  record?: MajorUpgradeStatus;
  /** The keelson.dev/major-upgrade-retry annotation's value. */
  retry?: string;
  now: Date;
}

export function upgradeIntent({ running, runningImage, asked, askedImage, record, retry, now }: IntentInput): Intent {
  const ours = record !== undefined && running !== undefined && majorOf(record.from) === majorOf(running);
  // Once its members are stopped, an upgrade goes to its end, and they start on what it upgraded to, whatever the
  // spec has asked since: the data is that version's.
  if (ours && record.phase === 'Halted' && retry !== undefined && retry !== record.retry) {
    return { kind: 'upgrade', record: { ...record, phase: 'Upgrading', retry, attempts: 1,
      message: 'asked again: pg_upgrade runs once more' } };
  }
  if (ours && ['Stopping', 'Upgrading', 'Halted'].includes(record.phase)) return { kind: 'upgrade', record };
  if (ours && record.phase === 'Completed') return { kind: 'done', record };
  if (running && majorOf(asked) < majorOf(running)) return { kind: 'lower' };
  if (!running || !runningImage || majorOf(asked) === majorOf(running)) return { kind: 'none', ...record ? { record } : {} };
  if (ours && majorOf(record.to) === majorOf(asked)) {
    if (record.phase === 'Pending') return { kind: 'upgrade', record: { ...record, to: asked, toImage: askedImage } };
    if (retry === undefined || retry === record.retry) return { kind: 'refused', record };
  }
  return { kind: 'upgrade', record: { from: running, fromImage: runningImage, to: asked, toImage: askedImage,
    phase: 'Pending', startTime: stamp(now), message: 'waiting for the cluster to be steady',
    ...(retry === undefined ? {} : { retry }) } };
}

/** The token of the full backup taken before an upgrade: one per attempt. */
export const backupBeforeToken = (record: MajorUpgradeStatus) =>
  `before-postgresql-${majorOf(record.to)}-${record.startTime!.replace(/[^0-9]/g, '')}`;

export interface PendingInput {
  record: MajorUpgradeStatus;
  /** The plan's step for the cluster on the version it runs. */
  step: Step;
  primary?: string;
  /** With a repository (spec.backup): the operator-asked backup slot, as the status says. */
  backup?: { token: string; phase: string; message?: string };
  backsUp: boolean;
  now: Date;
}

/**
 * An upgrade asked for but not begun: it waits for the cluster to be steady and, with spec.backup, for a full backup
 * of now; then the members are stopped. `backup`: the token of the backup to ask for.
 */
export function pendingUpgrade({ record, step, primary, backup, backsUp, now }: PendingInput):
{ record: MajorUpgradeStatus; backup?: string } {
  if (step.kind !== 'steady' || !primary) {
    const why = step.kind === 'wait' ? step.reason : step.kind === 'paused' ? 'spec.paused is set' : `next: ${step.kind}`;
    return { record: { ...record, phase: 'Pending', message: `waiting for the cluster to be steady (${why})` } };
  }
  const token = backupBeforeToken(record);
  if (backsUp && backup?.token === token && backup.phase === 'Failed') {
    return { record: { ...record, phase: 'Failed', backup: token, completionTime: stamp(now),
      message: `the full backup before the upgrade failed, and nothing was stopped: ${backup.message ?? ''}`.slice(0, 2000) } };
  }
  if (backsUp && !(backup?.token === token && backup.phase === 'Completed')) {
    return { backup: token, record: { ...record, phase: 'Pending', backup: token,
      message: `a full backup (${token}) is taken first: ${backup?.token === token ? backup.message ?? 'running' : 'asked'}` } };
  }
  return { record: { ...record, phase: 'Stopping', primary, message: `stopping every member to upgrade the data of ` +
    `${primary} from PostgreSQL ${record.from} to ${record.to}` } };
}

/** The end of what a pod said, its beginning cut: the verdict comes last. */
const tail = (text: string, length = 1500) => (text.length > length ? `...${text.slice(-length)}` : text);

/**
 * How long the upgrade pod may go unscheduled, or its containers unable to start (an image not there, a Secret
 * missing), before it is given up on: it never ran, so nothing was touched.
 */
export const givenUpAfterMs = 120_000;
/** How often a pod killed before it ended (a node lost, memory) is run again before the upgrade stops to ask. */
export const maxAttempts = 3;

/**
 * How the upgrade pod ended, if it did: Succeeded; untouched (it never ran, an init container failed, or the script
 * said the old data directory is as it was); notWhole (the script said it may not be); or cut short (killed without a
 * word: run again, as the script resumes or tells).
 */
export function upgradePodOutcome(pod: Pod, now: Date): { kind: 'running' } | { kind: 'succeeded' } |
{ kind: 'untouched' | 'notWhole' | 'cutShort'; said: string } {
  if (pod.status?.phase === 'Succeeded') return { kind: 'succeeded' };
  const init = pod.status?.initContainerStatuses ?? [];
  const upgrade = pod.status?.containerStatuses?.find((s) => s.name === 'upgrade');
  const waiting = [...init, upgrade].find((s) => ['ErrImagePull', 'ImagePullBackOff', 'ErrImageNeverPull',
    'InvalidImageName', 'CreateContainerConfigError'].includes(s?.state?.waiting?.reason ?? ''));
  const age = now.getTime() - Date.parse(pod.metadata.creationTimestamp ?? now.toISOString());
  if (waiting && age >= givenUpAfterMs) {
    return { kind: 'untouched', said: `container ${waiting.name} (${waiting.image}) cannot start: ` +
      `${waiting.state!.waiting!.reason}: ${waiting.state!.waiting!.message ?? ''}`.trim() };
  }
  const unscheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
  if (unscheduled && now.getTime() - Date.parse(unscheduled.lastTransitionTime ?? '') >= givenUpAfterMs) {
    return { kind: 'untouched', said: `not scheduled: ${unscheduled.message ?? unscheduled.reason ?? ''}` };
  }
  const said = (name: string | undefined, terminated: { exitCode?: number; message?: string }) =>
    `${name} exited with ${terminated.exitCode}${terminated.message?.trim() ? `: ${tail(terminated.message.trim())}` : ''}`;
  const failedInit = init.find((s) => (s.state?.terminated?.exitCode ?? 0) !== 0);
  if (failedInit) return { kind: 'untouched', said: said(failedInit.name, failedInit.state!.terminated!) };
  const ended = upgrade?.state?.terminated;
  if (ended && ended.exitCode === untouchedExitCode) return { kind: 'untouched', said: said('upgrade', ended) };
  if (ended && ended.exitCode === notWholeExitCode) return { kind: 'notWhole', said: said('upgrade', ended) };
  if (pod.status?.phase === 'Failed' || (ended && ended.exitCode !== 0)) {
    return { kind: 'cutShort', said: ended ? said('upgrade', ended)
      : `the pod failed: ${pod.status?.reason ?? ''} ${pod.status?.message ?? ''}`.trim() };
  }
  return { kind: 'running' };
}

/** The MajorUpgrade condition: True while one is under way; False once it ended, saying how; none if never asked. */
export function majorUpgradeCondition(intent: Intent, running: string | undefined, generation: number | undefined):
Pending | undefined {
  const base = { type: 'MajorUpgrade', observedGeneration: generation };
  switch (intent.kind) {
    case 'lower':
      return { ...base, status: 'False', reason: 'LowerVersion', message: `a lower major version than the members ` +
        `run (${running}) cannot read their data: they stay on ${running}` };
    case 'refused':
      return { ...base, status: 'False', reason: 'Failed', message: (`${intent.record.message}; the members run ` +
        `${running}. Once the cause is mended, ask again: kubectl annotate --overwrite pgc <name> ` +
        `${majorUpgradeRetryAnnotation}=<a new value>`).slice(-2048) };
    case 'upgrade':
      return { ...base, status: intent.record.phase === 'Halted' ? 'False' : 'True', reason: intent.record.phase,
        message: intent.record.message };
    default:
      return intent.record ? { ...base, status: 'False', reason: intent.record.phase, message: intent.record.message }
        : undefined;
  }
}

export interface MajorUpgradeDeps {
  pod(namespace: string, name: string): Pod | undefined;
  /** Runs a script in a member's postgres container. */
  run(namespace: string, pod: string, script: string): Promise<string>;
  memberPods(cluster: Cluster): Pod[];
  create(object: KubeObject): Promise<void>;
  deletePod(pod: Pod): Promise<void>;
  record(cluster: Cluster, type: 'Normal' | 'Warning', reason: string, note: string): void;
}

/** What a halted upgrade says: no member is started, and what the user can do. */
function haltedMessage(record: MajorUpgradeStatus, why: string): string {
  return `no member is started: ${why}. The primary's data may be neither PostgreSQL ${record.from}'s nor ` +
    `${record.to}'s whole; the replicas' volumes hold ${record.from}'s as of the stop. Ask again ` +
    `(${majorUpgradeRetryAnnotation}) to run pg_upgrade once more, or recover from the backup taken before it`;
}

/** Takes an upgrade from its members stopped to its end, one look per reconcile; the plan takes no step meanwhile. */
export class MajorUpgrades {
  /**
   * By cluster uid, the record this process last wrote, until the cache shows it: a reconcile of the
   * cluster as read before that write must not act on the phase before it (start a member on a volume pg_upgrade
   * runs on).
   */
  private readonly written = new Map<string, { record: MajorUpgradeStatus }>();

  constructor(private readonly deps: MajorUpgradeDeps, private readonly now: () => Date = () => new Date()) {}

  /** Drops what is remembered of a cluster gone (by uid). */
  forget(uid: string): void {
    forgetUid(this.written, uid);
  }

  /** The cluster's upgrade record: as its status says, or as this process last wrote it if the status is behind. */
  latest(cluster: Cluster): MajorUpgradeStatus | undefined {
    const cached = cluster.status?.majorUpgrade;
    const memo = this.written.get(cluster.metadata.uid!);
    if (!memo) return cached;
    if (isDeepStrictEqual(cached, JSON.parse(JSON.stringify(memo.record)))) {
      this.written.delete(cluster.metadata.uid!);
      return cached;
    }
    return memo.record;
  }

  /** Remembers the record just written into the cluster's status. */
  wrote(cluster: Cluster, record: MajorUpgradeStatus | undefined): void {
    if (record) this.written.set(cluster.metadata.uid!, { record });
  }

  async drive(cluster: Cluster, asked: Spec, record: MajorUpgradeStatus):
  Promise<{ record: MajorUpgradeStatus; step: Step }> {
    const spec = { ...asked, version: record.to, image: record.toImage ?? asked.image };
    const wait = (r: MajorUpgradeStatus) => ({ record: r, step: { kind: 'wait' as const, requeueAfterMs: 2000,
      reason: `major upgrade from PostgreSQL ${r.from} to ${r.to}: ${r.message}` } });
    const { namespace, name } = cluster.metadata;
    if (record.phase === 'Halted') return wait(record);
    if (record.phase === 'Stopping') {
      // The primary first: a clean stop sends its last WAL to the replicas that stream, which then stop too. Only
      // the primary's volume is upgraded, so only its pod must be gone (a replica's on a lost node may never go).
      const members = this.deps.memberPods(cluster);
      const primary = members.find((p) => p.metadata.name === record.primary);
      const others = members.filter((p) => p !== primary && !p.metadata.deletionTimestamp);
      if (primary) {
        if (!primary.metadata.deletionTimestamp) await this.deps.deletePod(primary);
        return wait({ ...record, message: `stopping the primary, ${record.primary}` });
      }
      for (const pod of others) await this.deps.deletePod(pod);
    }
    const pod = this.deps.pod(namespace!, names.majorUpgrade(name));
    if (!pod) {
      const made = await this.create(cluster, spec, record);
      if (made && 'refused' in made) {
        const failed = { ...record, phase: 'Failed' as const, completionTime: stamp(this.now()), message: (`the ` +
          `upgrade to PostgreSQL ${record.to} failed, and the members start again on ${record.from}, whose data was ` +
          `not changed: the apiserver refused the upgrade pod: ${made.refused}`).slice(0, 2048) };
        this.deps.record(cluster, 'Warning', 'MajorUpgradeFailed', failed.message);
        return wait(failed);
      }
      return wait({ ...record, phase: 'Upgrading', message: made?.waiting ??
        `pg_upgrade runs in pod ${names.majorUpgrade(name)}` });
    }
    if (pod.metadata.deletionTimestamp) return wait(record);
    const ended = (phase: 'Completed' | 'Failed' | 'Halted', message: string, event: [string, string]) => {
      const next = { ...record, phase, message: message.slice(0, 2048), completionTime: stamp(this.now()) };
      return this.deps.deletePod(pod)
        .then(() => this.deps.record(cluster, event[0] as 'Normal' | 'Warning', event[1], next.message))
        .then(() => wait(next));
    };
    const outcome = upgradePodOutcome(pod, this.now());
    switch (outcome.kind) {
      case 'succeeded':
        return ended('Completed', `the data of ${record.primary} was upgraded from PostgreSQL ${record.from} to ` +
          `${record.to}; the members start on ${spec.version}, the replicas cloned afresh from it`,
        ['Normal', 'MajorUpgradeCompleted']);
      case 'untouched':
        return ended('Failed', `the upgrade to PostgreSQL ${record.to} failed, and the members start again on ` +
          `${record.from}, whose data was not changed: ${outcome.said}`, ['Warning', 'MajorUpgradeFailed']);
      case 'cutShort':
        if ((record.attempts ?? 1) < maxAttempts) {
          await this.deps.deletePod(pod);
          return wait({ ...record, phase: 'Upgrading', attempts: (record.attempts ?? 1) + 1,
            message: `pg_upgrade was cut short ` +
            `(${tail(outcome.said, 300)}); run again, where it left off` });
        }
        return ended('Halted', haltedMessage(record, `pg_upgrade was cut short ${maxAttempts} times: ` +
          outcome.said), ['Warning', 'MajorUpgradeHalted']);
      case 'notWhole':
        return ended('Halted', haltedMessage(record, outcome.said), ['Warning', 'MajorUpgradeHalted']);
      default:
        return wait({ ...record, phase: 'Upgrading', message: `pg_upgrade runs in pod ${pod.metadata.name}` +
          `${record.attempts && record.attempts > 1 ? ` (attempt ${record.attempts})` : ''}` });
    }
  }

  /**
   * Once the upgraded primary (a ready pod of the new major) takes writes, starts what pg_upgrade leaves to do, once;
   * a failure to start it is tried again at the next look.
   */
  async afterwards(cluster: Cluster, record: MajorUpgradeStatus, primary: Pod): Promise<MajorUpgradeStatus> {
    const version = primary.metadata.annotations?.[versionAnnotation];
    if (record.phase !== 'Completed' || record.afterUpgradeStarted || !version ||
      majorOf(version) !== majorOf(record.to)) return record;
    try {
      await this.deps.run(cluster.metadata.namespace!, primary.metadata.name, afterUpgradeScript);
    } catch {
      return record;
    }
    return { ...record, afterUpgradeStarted: stamp(this.now()), message: `${record.message}; ANALYZE of every ` +
      `database and extension updates started on ${primary.metadata.name}` };
  }

  /**
   * Makes the upgrade pod once no member pod uses the primary's volume (deleting one that does, as a read of the
   * cluster from before the upgrade may have made); undefined when made, else why it waits. The apiserver refusing it
   * (a quota, Pod Security, a webhook) ends the upgrade: nothing was touched.
   */
  private async create(cluster: Cluster, spec: Spec, record: MajorUpgradeStatus):
  Promise<{ waiting: string } | { refused: string } | undefined> {
    const user = this.deps.memberPods(cluster).find((p) => p.metadata.name === record.primary);
    if (user) {
      if (!user.metadata.deletionTimestamp) await this.deps.deletePod(user);
      return { waiting: `pod ${user.metadata.name} still uses the volume` };
    }
    try {
      await this.deps.create(majorUpgradePod(cluster, spec, { member: record.primary!, fromVersion: record.from,
        fromImage: record.fromImage }));
      return undefined;
    } catch (error) {
      if (error instanceof ApiError && error.status >= 400 && error.status < 500) return { refused: error.message };
      throw error;
    }
  }
}
