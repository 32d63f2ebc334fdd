// The level-triggered loop's one decision, from what is observed now, as in the etcd operator: fix exactly one thing,
// in this order: a second primary, a lost primary (failover after a timeout), the synchronous standbys and
// replication slots; then, while any member is Pending or going away (for a bounded time), wait; then pods that are
// not members, a member whose volume is being deleted, a dead member, a replica stuck Pending, the size (one member
// per step), the minor version or a parameter only a restart applies (replicas, then a switchover, then the old primary). Nothing here deletes data:
// volumes go only by scaling down or replacing a stuck member, and only when the spec says so.
//
// Who the primary is, is what the cluster's Lease says, as in Patroni's leader key: the primary's member agent
// renews it and stops PostgreSQL when it cannot (agent.ts), so a Lease left unrenewed for its whole duration means
// the old primary takes no more writes (in failsafe, once the Lease was taken from it), and only then may another
// member take the Lease and be promoted.

export type Role = 'primary' | 'replica';

export interface MemberPod {
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  ready: boolean;
  role: Role;
  /** The PostgreSQL version its image runs. */
  version: string;
  /** What else it was made from (archive.ts's archiveRevision); '' for nothing. */
  revision: string;
  /** The parameters it has been given that only a restart applies (configuration.ts); none: undefined. */
  restartPending?: string;
  /** How it verifies its primary (objects.ts's tlsAnnotation); '' for a member made before members served TLS. */
  tls?: string;
  deleting: boolean;
  /** How long it has been Pending, starting or going away, on this process's monotonic clock; unset when it is not. */
  busyForMs?: number;
  /** The scheduler found no node for it (as for a volume bound to a node that is gone), rather than its image. */
  unschedulable?: boolean;
  /** Its member script stopped, to be the primary on a volume with no data once the cluster's data exists. */
  noData?: boolean;
  /** Its node takes no new pods: cordoned, as a drain begins (drain.ts). */
  cordoned?: boolean;
}

export interface Member {
  name: string;
  index: number;
  /** The member's claim exists, so its data may survive its pod. */
  claim: boolean;
  /** Someone deleted the member's claim: it goes once no pod uses it, and no pod is started on it again. */
  claimDeleting?: boolean;
  pod?: MemberPod;
}

/**
 * The synchronous standbys in force on a primary: a commit there is acknowledged once \`quorum\` of \`standbys\` have
 * flushed it. Recorded in status before any commit can depend on a larger set, and after one it no longer depends
 * on a smaller one, so a failover knows whom it must hear from (Patroni's quorum mode keeps it in its DCS).
 */
export interface Synchronous {
  primary: string;
  quorum: number;
  standbys: string[];
  /** The replication slots the primary keeps, one per other member, as last made (and pruned) there. */
  slots?: string[];
}

export interface Observed {
  cluster: string;
  size: number;
  version: string;
  /** What else members are to be made from: one made otherwise is restarted as for a minor version change. */
  revision: string;
  /**
   * How members are to verify their primary: verify-full, or prefer while the primary serves no TLS yet. Members made
   * otherwise are restarted as for a parameter, so a cluster made before TLS takes two rolls to verify-full.
   */
  tls?: string;
  paused: boolean;
  keepVolumeOnScaleDown: boolean;
  /** Member claims and pods, by member name. */
  members: Member[];
  /** The index the next new member gets: past every claim the cluster ever made, kept ones included. */
  nextIndex: number;
  /** Pods labelled for the cluster that are no member's. */
  strangers: string[];
  /** Member pods and claims still going away. */
  terminating: string[];
  /** The primary as last recorded in status; undefined before the seed ever ran. */
  primary?: string;
  /** How long the primary has been gone, unready or unrenewed, on this process's monotonic clock; 0 while it is up. */
  primaryLostForMs: number;
  /** The cluster's Lease: its holder, and whether it went unrenewed for its whole duration as this process saw it. */
  lease?: {
    holder: string;
    expired: boolean;
    /** The members the holder's agent counts on in failsafe (agent.ts), as its last renewal wrote; unknown if none. */
    failsafePeers?: string[];
  };
  /** Replicas that must confirm each commit (spec.synchronousReplicas). */
  synchronousReplicas: number;
  /** The synchronous standbys recorded in status as in force, with the primary they are in force on. */
  synchronous?: Synchronous;
  /** How long a member may be busy before nothing waits for it, and a Pending replica is replaced. */
  stuckAfterMs: number;
  /** How long ago this process last replaced a stuck member of the cluster; unset if it never did. */
  lastReplacedMsAgo?: number;
  /** Whether a backup exists to restore from (the cluster's own, or spec.bootstrap.fromBackup's). */
  backupAvailable: boolean;
  /** The spec asks to create the cluster from a backup. */
  bootstrapFromBackup: boolean;
  /** A ready replica a switchover was asked to (switchover.ts). */
  switchoverTo?: string;
}

export type Step =
  | { kind: 'paused' }
  /** `rollStopped`: a roll waits for a member it restarted, which a corrected spec.postgresql may be what it needs. */
  | { kind: 'wait'; reason: string; requeueAfterMs?: number; rollStopped?: boolean }
  | { kind: 'create-seed'; member: string; restore: boolean }
  | { kind: 'failed'; reason: 'NoBackup'; message: string }
  | { kind: 'remove-stranger'; pod: string }
  | { kind: 'delete-pod'; member: string; reason: string }
  | { kind: 'start-member'; member: string; role: Role }
  | { kind: 'failover'; from: string; candidates: string[] }
  | { kind: 'release-lease'; from: string }
  | { kind: 'finish-promotion'; member: string }
  | { kind: 'fence-primary'; member: string; holder: string }
  | { kind: 'set-synchronous'; member: string; synchronous: Synchronous; dropped: string[] }
  | { kind: 'add-member'; member: string }
  | { kind: 'remove-member'; member: string; deleteClaim: boolean }
  | { kind: 'replace-member'; member: string; deleteClaim: boolean; reason: string }
  | { kind: 'upgrade-member'; member: string }
  /**
   * `to`: promoted when its WAL goes as far as any other's; `asked`: by the switchover annotation; `drain`: the primary's
   * node is cordoned.
   */
  | { kind: 'switchover'; from: string; candidates: string[]; to?: string; asked?: boolean; drain?: boolean }
  | { kind: 'steady' };

export const failoverTimeoutMs = 30_000;
/** On the Lease: the members' agents' addresses, written by the operator, which the primary's agent calls in failsafe. */
export const failsafeMembersAnnotation = 'keelson.dev/failsafe-members';
/** On the Lease: the members the primary's agent counts on in failsafe, written with each renewal. */
export const failsafePeersAnnotation = 'keelson.dev/failsafe-peers';
/** Where each member's agent answers other members' failsafe calls. */
export const failsafePort = 8008;
/** Where each member's agent serves PostgreSQL's statistics for Prometheus (metrics.ts): postgres_exporter's port. */
export const metricsPort = 9187;
/** How long a Lease renewal holds: the operator waits this long, unrenewed, before another member may take it. */
export const leaseDurationMs = 15_000;
/** How often the primary's agent renews, and how long an attempt may take. */
export const renewIntervalMs = 2_000;
/**
 * The agent stops PostgreSQL this long after the start of its last renewal that succeeded: well inside the Lease's
 * duration, which the operator counts from when it saw that renewal, later still.
 */
export const fenceAfterMs = 8_000;

export function memberName(cluster: string, index: number): string {
  return `${cluster}-${String(index).padStart(4, '0')}`;
}

/** A member's physical replication slot: its name as PostgreSQL allows slot names (a-z, 0-9, _; 63 at most). */
export function slotName(member: string): string {
  return member.replace(/[^a-z0-9_]/g, '_').slice(-63);
}

/** What the slots of a cluster's members look like, as a PostgreSQL regular expression: no other slot is dropped. */
export function slotPattern(cluster: string): string {
  return `^${slotName(memberName(cluster, 0)).replace(/0000$/, '')}[0-9]{4,}$`;
}

export function majorOf(version: string): number {
  return Number.parseInt(version, 10);
}

const alive = (m: Member) => m.pod !== undefined && !m.pod.deleting && m.pod.phase === 'Running';
const dead = (m: Member) => m.pod !== undefined && !m.pod.deleting && ['Failed', 'Succeeded', 'Unknown'].includes(m.pod.phase);
const aliveReplicas = (members: Member[], primary: string | undefined) =>
  members.filter((m) => m.name !== primary && alive(m) && m.pod!.role === 'replica');
const readyReplicas = (members: Member[], primary: string | undefined) =>
  aliveReplicas(members, primary).filter((m) => m.pod!.ready).map((m) => m.name);
const byIndex = (members: Member[]) => (a: string, b: string) =>
  (members.find((m) => m.name === a)?.index ?? 0) - (members.find((m) => m.name === b)?.index ?? 0);

/**
 * The Lease's holder once taken from a primary that may still run in failsafe (release-lease): no member's name, so
 * every agent refuses to vouch for it, but still the primary until another is promoted.
 */
export const releasedSuffix = '.released';

/**
 * The primary: the member the Lease names (released or not); without a Lease (a cluster made before there was one), the member whose
 * live pod carries the primary role label, a ready one first; else the one status recorded; else the seed.
 */
export function currentPrimary(o: Pick<Observed, 'members' | 'primary' | 'lease'>): string | undefined {
  const named = o.lease && (o.lease.holder.endsWith(releasedSuffix) ? o.lease.holder.slice(0, -releasedSuffix.length)
    : o.lease.holder);
  if (named && o.members.some((m) => m.name === named)) return named;
  const labelled = o.members.filter((m) => m.pod && !m.pod.deleting && m.pod.role === 'primary');
  return (labelled.find((m) => m.pod!.ready) ?? labelled[0])?.name ?? o.primary ??
    [...o.members].sort((a, b) => a.index - b.index)[0]?.name;
}

/** synchronous_standby_names for a set: ANY quorum of the standbys, or nothing (asynchronous). */
export function synchronousStandbyNames({ quorum, standbys }: Pick<Synchronous, 'quorum' | 'standbys'>): string {
  return quorum > 0 ? `ANY ${quorum} (${standbys.map((s) => `"${s}"`).join(', ')})` : '';
}

/** The replicas that stay at this size: the lowest-numbered, but those whose volume is being deleted. */
function staying(o: Pick<Observed, 'members' | 'size'>, primary: string): string[] {
  return o.members.filter((m) => m.name !== primary && !m.claimDeleting).sort((a, b) => a.index - b.index)
    .slice(0, o.size - 1).map((m) => m.name);
}

/**
 * The synchronous standbys `primary` should have: those of \`base\` that stay, and every staying replica that streams
 * (ready), so that the set only grows while the primary lives; the quorum capped by the replicas there are. With
 * fewer candidates than the quorum, every staying replica is named, so commits wait rather than go unconfirmed.
 * \`base\` defaults to the set recorded for this primary, else to every staying replica.
 */
export function wantedSynchronous(o: Pick<Observed, 'members' | 'size' | 'synchronousReplicas' | 'synchronous'>,
  primary: string, base?: string[]): Synchronous {
  const stay = staying(o, primary);
  const quorum = Math.min(o.synchronousReplicas, stay.length);
  if (quorum === 0) return { primary, quorum: 0, standbys: [] };
  const from = base ?? (o.synchronous?.primary === primary ? o.synchronous.standbys : stay);
  const chosen = new Set([...from, ...readyReplicas(o.members, primary)].filter((name) => stay.includes(name)));
  const standbys = chosen.size >= quorum ? [...chosen] : stay;
  return { primary, quorum, standbys: standbys.sort(byIndex(o.members)) };
}

/** The slots a primary keeps: one for every other member, so that it keeps the WAL each has yet to receive. */
export function wantedSlots(o: Pick<Observed, 'members'>, primary: string): string[] {
  return o.members.filter((m) => m.name !== primary).map((m) => slotName(m.name)).sort();
}

/**
 * Whom a promotion in place of \`from\` must hear from: the set recorded as in force on it; when none was recorded
 * for it (its promotion was cut short), every other member, with the quorum the spec asks for.
 */
export function votersAfter(o: Pick<Observed, 'members' | 'synchronousReplicas' | 'synchronous'>, from: string):
Pick<Synchronous, 'quorum' | 'standbys'> {
  if (o.synchronous?.primary === from) return o.synchronous;
  const others = o.members.filter((m) => m.name !== from).map((m) => m.name);
  return { quorum: Math.min(o.synchronousReplicas, others.length), standbys: others };
}

export function nextStep(o: Observed): Step {
  if (o.paused) return { kind: 'paused' };
  const members = [...o.members].sort((a, b) => a.index - b.index);

  if (members.length === 0) {
    // A new seed takes the first name again: its old pods and claims must be gone first (a pod started on a claim
    // being deleted holds that claim up).
    if (o.strangers.length) return { kind: 'remove-stranger', pod: o.strangers[0]! };
    if (o.terminating.length) return { kind: 'wait', reason: `${o.terminating.join(', ')} still going away` };
    const restore = o.primary !== undefined || o.bootstrapFromBackup;
    if (restore && !o.backupAvailable) {
      return { kind: 'failed', reason: 'NoBackup', message: o.primary
        ? 'every member and its data are gone, and there is no backup to restore from; nothing was deleted'
        : 'spec.bootstrap.fromBackup names no existing backup' };
    }
    return { kind: 'create-seed', member: memberName(o.cluster, 0), restore };
  }

  const primaryName = currentPrimary(o)!;
  const primary = members.find((m) => m.name === primaryName);

  // A member labelled primary that the Lease does not name may still take writes from clients of its own: its
  // agent stops PostgreSQL, and its pod goes so that it comes back as a replica.
  const stray = o.lease && members.find((m) => m.name !== primaryName && m.pod && !m.pod.deleting && m.pod.role === 'primary');
  if (stray) return { kind: 'fence-primary', member: stray.name, holder: primaryName };

  // The primary's member is gone, volume and all (its claim deleted after its pod): it cannot come back, and once
  // no pod of its name is left, nor a Lease its agent renews, it can take no writes, so another is promoted without
  // waiting out the timeout.
  if (!primary) {
    if (o.strangers.includes(primaryName)) return { kind: 'remove-stranger', pod: primaryName };
    const going = o.terminating.includes(`pod ${primaryName}`);
    const renewed = o.lease !== undefined && !o.lease.expired && o.lease.holder === primaryName;
    const replicas = aliveReplicas(members, primaryName).map((m) => m.name);
    if (!going && !renewed && replicas.length) return { kind: 'failover', from: primaryName, candidates: replicas };
  }

  // A primary gone, unready, or with its Lease unrenewed, past the timeout, is failed over even while its pod is still
  // going away (a node that died never confirms the deletion); before that, its pod is deleted. Another member is
  // promoted only once the old one can take no writes: its pod is gone, or its Lease expired (its agent stopped it).
  // Every replica that runs is a candidate: which one has every acknowledged commit is asked of them (choosePromotion).
  const up = primaryUp(o);
  const candidates = aliveReplicas(members, primaryName).map((m) => m.name);
  const lostFor = up ? 0 : o.primaryLostForMs;
  if (primary && !up && candidates.length > 0 && lostFor >= failoverTimeoutMs) {
    if (primary.pod && !primary.pod.deleting) return { kind: 'delete-pod', member: primary.name, reason: 'fenced before failover' };
    if (primary.pod && o.lease && !o.lease.expired) {
      return { kind: 'wait', reason: `primary ${primary.name} is going away; failing over once its pod is gone or its ` +
        `Lease expires`, requeueAfterMs: 1000 };
    }
    // With its pod still there, the old primary may be in failsafe: only a member it counts on stops it, by refusing
    // to vouch for it, and is kept by its own promise from taking writes before it has stopped.
    const fencing = primary.pod && o.lease?.failsafePeers ? candidates.filter((c) => o.lease!.failsafePeers!.includes(c))
      : candidates;
    if (fencing.length === 0) {
      return { kind: 'wait', reason: `primary ${primary.name} may still take writes in failsafe, and none of ` +
        `${candidates.join(', ')} is a member it counts on; failing over once its pod is gone`, requeueAfterMs: 5000 };
    }
    // Before anyone is asked how far its WAL goes, the Lease names the old primary no more: every member then refuses
    // to vouch for it, and it stops; the Lease, unrenewed for its duration again, says it has.
    if (primary.pod && o.lease?.failsafePeers && o.lease.holder === primary.name) {
      return { kind: 'release-lease', from: primary.name };
    }
    return { kind: 'failover', from: primary.name, candidates: fencing };
  }
  // The Lease names a member whose promotion did not finish (the operator stopped between the two).
  if (primary && up && primary.pod!.role !== 'primary') return { kind: 'finish-promotion', member: primary.name };

  // The synchronous standbys follow the members before anything waits on one of them: a member Pending on a dead node
  // must not leave the primary confirming commits with nobody.
  // So do the primary's replication slots: a removed member's is dropped once it no longer streams.
  if (up) {
    const wanted = { ...wantedSynchronous(o, primaryName), slots: wantedSlots(o, primaryName) };
    const recorded = o.synchronous?.primary === primaryName ? o.synchronous : undefined;
    if (!recorded || recorded.quorum !== wanted.quorum || recorded.standbys.join() !== wanted.standbys.join() ||
      recorded.slots?.join() !== wanted.slots.join()) {
      return { kind: 'set-synchronous', member: primaryName, synchronous: wanted,
        dropped: recorded?.standbys.filter((s) => !wanted.standbys.includes(s)) ?? [] };
    }
  }

  // A member busy for long (Pending on a node that is gone, never ready, never done going away) is not waited for.
  const busy = members.filter((m) => m.pod && (m.pod.deleting || m.pod.phase === 'Pending' ||
    (m.pod.phase === 'Running' && !m.pod.ready && m.name !== primaryName)));
  const stateOf = (m: Member) => m.pod!.deleting ? 'going away' : m.pod!.phase === 'Pending' ? 'Pending' : 'starting';
  const waited = busy.find((m) => (m.pod!.busyForMs ?? 0) < o.stuckAfterMs);
  if (waited) return { kind: 'wait', reason: `member ${waited.name} is ${stateOf(waited)}` };
  if (o.strangers.length) return { kind: 'remove-stranger', pod: o.strangers[0]! };

  // A volume someone is deleting stays while a pod uses it: its member is moved off it, the primary by a switchover.
  const leaving = members.find((m) => m.claimDeleting && m.pod);
  if (leaving?.name === primaryName) {
    const ready = readyReplicas(members, primaryName);
    if (ready.length) return switchover(o, primaryName, ready);
  } else if (leaving) {
    return { kind: 'delete-pod', member: leaving.name, reason: 'its volume is being deleted' };
  }

  const broken = members.find((m) => dead(m));
  if (broken) return { kind: 'delete-pod', member: broken.name, reason: `its pod is ${broken.pod!.phase}` };
  // The primary first: replicas clone from it (a cluster made again over its kept volumes has no pod at all).
  const missing = [...members].sort((a, b) => Number(b.name === primaryName) - Number(a.name === primaryName))
    .find((m) => !m.pod && !m.claimDeleting);
  if (missing) {
    // The primary comes back on its own volume.
    const role: Role = missing.name === primaryName ? 'primary' : 'replica';
    // With the primary gone for good, or stopped on a volume that came back empty, a replica with data starts to be
    // a candidate.
    if (role === 'replica' && !up && primary && !primary.pod?.noData) {
      return { kind: 'wait', reason: `member ${missing.name} waits for a primary to clone from` };
    }
    return { kind: 'start-member', member: missing.name, role };
  }
  if (!up) {
    const why = !o.lease || !o.lease.expired ? 'is not ready' : 'has not renewed its Lease';
    return { kind: 'wait', reason: `primary ${primaryName} ${why}; failing over to a ready ` +
      `replica after ${failoverTimeoutMs / 1000}s`, requeueAfterMs: Math.max(1000, failoverTimeoutMs - lostFor) };
  }
  if (leaving) {
    return { kind: 'wait', reason: `the volume of primary ${primaryName} is being deleted; it is switched over once a ` +
      'replica is ready', requeueAfterMs: 5000 };
  }
  // A drain cordons the node first, then evicts: the primary's eviction is refused (its own PodDisruptionBudget) until
  // it has been switched over to a replica on a node that stays, so the drain is a switchover, never a failover.
  // Every ready replica answers how far its WAL goes; the one named is promoted if none has more.
  if (primary!.pod!.cordoned) {
    const step = switchover(o, primaryName, readyReplicas(members, primaryName), true);
    if (step.kind !== 'switchover' || step.to) return step.kind === 'switchover' ? { ...step, drain: true } : step;
  }
  // One replacement at a time: a new member that cannot be scheduled either waits as long again before the next.
  const pending = busy.find((m) => m.name !== primaryName && m.pod!.phase === 'Pending' && m.pod!.unschedulable &&
    !m.pod!.deleting);
  if (pending && (o.lastReplacedMsAgo ?? Infinity) >= 2 * o.stuckAfterMs) {
    return { kind: 'replace-member', member: pending.name, deleteClaim: !o.keepVolumeOnScaleDown,
      reason: `Pending for ${Math.round(pending.pod!.busyForMs! / 1000)}s` };
  }

  const kept = members.filter((m) => !m.claimDeleting);
  if (kept.length < o.size) {
    return { kind: 'add-member', member: memberName(o.cluster, o.nextIndex) };
  }
  if (kept.length > o.size) {
    const victim = [...kept].reverse().find((m) => m.name !== primaryName)!;
    return { kind: 'remove-member', member: victim.name, deleteClaim: !o.keepVolumeOnScaleDown };
  }

  // A lone member is not restarted for a parameter (nor for TLS): were it then unable to start, no member would be left to check a
  // corrected spec on. It takes the parameter when its pod is next made (deleting it is asking for that).
  const outdated = members.filter((m) => m.pod!.version !== o.version || m.pod!.revision !== o.revision ||
    ((m.pod!.restartPending || (o.tls !== undefined && m.pod!.tls !== o.tls)) && members.length > 1));
  // A member the roll restarted that is not ready stops it: the next would likely fail as that one did, and with no
  // replica left the primary would be restarted under the writes.
  const failed = outdated.length ? members.find((m) => !outdated.includes(m) && m.name !== primaryName && !m.pod!.ready)
    : undefined;
  if (failed) {
    return { kind: 'wait', reason: `member ${failed.name} is not ready since it was restarted: the roll waits for it`,
      requeueAfterMs: 30_000, rollStopped: true };
  }
  const replica = outdated.find((m) => m.name !== primaryName);
  if (replica) return { kind: 'upgrade-member', member: replica.name };
  const ready = readyReplicas(members, primaryName);
  if (outdated.length) {
    if (ready.length) return switchover(o, primaryName, ready);
    // The primary restarts in place only when it is the only member: else a replica takes over first.
    return members.length === 1 ? { kind: 'upgrade-member', member: primaryName }
      : { kind: 'wait', reason: `the roll waits for a ready replica to switch over to from ${primaryName}`,
        requeueAfterMs: 30_000, rollStopped: true };
  }
  // Asked for, once nothing else is to be done: every ready replica is asked how far its WAL goes, as in a failover.
  // One that must wait for replicas to be ready holds up nothing else (the cluster is steady meanwhile).
  if (o.switchoverTo && o.switchoverTo !== primaryName && ready.includes(o.switchoverTo)) {
    const step = switchover(o, primaryName, ready);
    if (step.kind === 'switchover') return { ...step, to: o.switchoverTo, asked: true };
  }
  const stuck = busy[0];
  if (stuck) {
    return { kind: 'wait', reason: `member ${stuck.name} has been ${stateOf(stuck)} for ` +
      `${Math.round(stuck.pod!.busyForMs! / 1000)}s; nothing waits for it`, requeueAfterMs: 30_000 };
  }
  return { kind: 'steady' };
}

/**
 * A switchover to one of the ready replicas, once they are enough of the synchronous standbys to promote one: the
 * primary is stopped first, and must not be for a promotion that would then wait for a replica that is not ready.
 */
function switchover(o: Observed, from: string, ready: string[],
  nameOne = ready.some((name) => o.members.find((m) => m.name === name)?.pod?.cordoned)): Step {
  const voters = votersAfter(o, from);
  const gone = voters.standbys.filter((s) => !o.members.some((m) => m.name === s));
  const decision = choosePromotion(ready.map((member) => ({ member, lsn: 0n })), voters, gone);
  if ('waiting' in decision) {
    return { kind: 'wait', reason: `switchover from ${from} waits: ${decision.waiting}`, requeueAfterMs: 5000 };
  }
  // With a node cordoned, one is named to be promoted when its WAL goes as far as any other's: the one asked for,
  // else the first whose node is not cordoned, so that no switchover moves the primary where a drain would move it
  // again.
  const staysUp = (name: string) => !o.members.find((m) => m.name === name)?.pod?.cordoned;
  const to = nameOne ? [o.switchoverTo, ...ready].find((name) => name !== undefined && ready.includes(name) &&
    staysUp(name)) : undefined;
  return { kind: 'switchover', from, candidates: ready, ...(to ? { to } : {}) };
}

/** Whether the primary serves: its pod runs and is ready, and its Lease, if any, is renewed. */
export function primaryUp(o: Pick<Observed, 'members' | 'primary' | 'lease'>): boolean {
  const primary = o.members.find((m) => m.name === currentPrimary(o));
  return primary !== undefined && alive(primary) && primary.pod!.ready && (!o.lease || !o.lease.expired);
}

export interface CandidatePosition {
  member: string;
  /** How far its WAL goes: flushed by a replica, written by a primary. */
  lsn: bigint;
}

/**
 * The member to promote, from what the candidates answered: only when enough of the synchronous standbys answered
 * that at least one of them has every acknowledged commit (n - k + 1 of ANY k, as Patroni's quorum mode; a standby
 * whose volume is gone counts as heard, as nothing can be learnt from it), the one whose WAL goes furthest.
 */
export function choosePromotion(answers: CandidatePosition[], voters: Pick<Synchronous, 'quorum' | 'standbys'>,
  gone: readonly string[]): { chosen: string } | { waiting: string } {
  const heard = voters.standbys.filter((s) => gone.includes(s) || answers.some((a) => a.member === s));
  const needed = voters.standbys.length - voters.quorum + 1;
  if (voters.quorum > 0 && heard.length < needed) {
    const silent = voters.standbys.filter((s) => !heard.includes(s));
    return { waiting: `${heard.length} of the synchronous standbys answered, and ${needed} must (ANY ${voters.quorum} of ` +
      `${voters.standbys.length}) to be sure no acknowledged commit is lost; waiting for ${silent.join(', ')}` };
  }
  const chosen = bestCandidate(answers);
  return chosen ? { chosen } : { waiting: 'no candidate answered' };
}

/** The candidate whose WAL goes furthest; ties go to the lowest-numbered member. */
export function bestCandidate(positions: CandidatePosition[]): string | undefined {
  return [...positions].sort((a, b) => (a.lsn === b.lsn ? a.member.localeCompare(b.member) : a.lsn > b.lsn ? -1 : 1))[0]?.member;
}
