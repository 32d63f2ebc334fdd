// The level-triggered loop's one decision, from what is observed now, as in the etcd operator: while any member is
// Pending or going away, wait; otherwise fix exactly one thing, in this order: a second primary, a lost primary
// (failover after a timeout), pods that are not members, a dead replica, the synchronous standbys, the size (one
// member per step), the minor version (replicas, then a switchover, then the old primary). Nothing here deletes
// data: volumes go only by scaling down, and only when the spec says so.
//
// Who the primary is, is what the cluster's Lease says, as in Patroni's leader key: the primary's member agent
// renews it and stops PostgreSQL when it cannot (agent.ts), so a Lease left unrenewed for its whole duration means
// the old primary takes no more writes, and only then may another member take the Lease and be promoted.

export type Role = 'primary' | 'replica';

export interface MemberPod {
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  ready: boolean;
  role: Role;
  /** The PostgreSQL version its image runs. */
  version: string;
  deleting: boolean;
}

export interface Member {
  name: string;
  index: number;
  /** The member's claim exists, so its data may survive its pod. */
  claim: boolean;
  pod?: MemberPod;
}

export interface Observed {
  cluster: string;
  size: number;
  version: string;
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
  /** Since when the primary has been gone or unready, as last recorded. */
  primaryLostSince?: Date;
  /** The cluster's Lease: its holder, and whether it went unrenewed for its whole duration as this process saw it. */
  lease?: { holder: string; expired: boolean };
  /** Replicas that must confirm each commit (spec.synchronousReplicas). */
  synchronousReplicas: number;
  /** synchronous_standby_names as last set on the primary (its pod's annotation); undefined when never set. */
  synchronousStandbyNames?: string;
  /** Whether a backup exists to restore from (the cluster's own, or spec.bootstrap.fromBackup's). */
  backupAvailable: boolean;
  /** The spec asks to create the cluster from a backup. */
  bootstrapFromBackup: boolean;
  now: Date;
}

export type Step =
  | { kind: 'paused' }
  | { kind: 'wait'; reason: string; requeueAfterMs?: number }
  | { kind: 'create-seed'; member: string; restore: boolean }
  | { kind: 'failed'; reason: 'NoBackup'; message: string }
  | { kind: 'remove-stranger'; pod: string }
  | { kind: 'delete-pod'; member: string; reason: string }
  | { kind: 'start-member'; member: string; role: Role }
  | { kind: 'failover'; from: string; candidates: string[] }
  | { kind: 'finish-promotion'; member: string }
  | { kind: 'fence-primary'; member: string; holder: string }
  | { kind: 'set-synchronous'; member: string; value: string }
  | { kind: 'add-member'; member: string }
  | { kind: 'remove-member'; member: string; deleteClaim: boolean }
  | { kind: 'upgrade-member'; member: string }
  | { kind: 'switchover'; from: string; candidates: string[] }
  | { kind: 'steady' };

export const failoverTimeoutMs = 30_000;
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

export function majorOf(version: string): number {
  return Number.parseInt(version, 10);
}

const alive = (m: Member) => m.pod !== undefined && !m.pod.deleting && m.pod.phase === 'Running';
const dead = (m: Member) => m.pod !== undefined && !m.pod.deleting && ['Failed', 'Succeeded', 'Unknown'].includes(m.pod.phase);
const readyReplicas = (members: Member[], primary: string | undefined) =>
  members.filter((m) => m.name !== primary && alive(m) && m.pod!.ready && m.pod!.role === 'replica').map((m) => m.name);

/**
 * The primary: the member the Lease names; without a Lease (a cluster made before there was one), the member whose
 * live pod carries the primary role label, a ready one first; else the one status recorded; else the seed.
 */
export function currentPrimary(o: Pick<Observed, 'members' | 'primary' | 'lease'>): string | undefined {
  if (o.lease && o.members.some((m) => m.name === o.lease!.holder)) return o.lease.holder;
  const labelled = o.members.filter((m) => m.pod && !m.pod.deleting && m.pod.role === 'primary');
  return (labelled.find((m) => m.pod!.ready) ?? labelled[0])?.name ?? o.primary ??
    [...o.members].sort((a, b) => a.index - b.index)[0]?.name;
}

/**
 * synchronous_standby_names for the primary: a quorum (ANY n) of the replicas that stay at this size, so a commit is
 * acknowledged only once n of them have it. n is capped by the replicas there are; none means asynchronous.
 */
export function synchronousStandbyNames(o: Pick<Observed, 'members' | 'size' | 'synchronousReplicas'>, primary: string): string {
  const staying = o.members.filter((m) => m.name !== primary).sort((a, b) => a.index - b.index).slice(0, o.size - 1)
    .map((m) => `"${m.name}"`);
  const quorum = Math.min(o.synchronousReplicas, staying.length);
  return quorum > 0 ? `ANY ${quorum} (${staying.join(', ')})` : '';
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

  // A primary gone, unready, or with its Lease unrenewed, past the timeout, is failed over even while its pod is still
  // going away (a node that died never confirms the deletion); before that, its pod is deleted. Another member is
  // promoted only once the old one can take no writes: its pod is gone, or its Lease expired (its agent stopped it).
  const leaseHeld = !o.lease || !o.lease.expired;
  const primaryUp = primary !== undefined && alive(primary) && primary.pod!.ready && leaseHeld;
  const replicas = readyReplicas(members, primaryName);
  const lostFor = primaryUp ? 0 : o.now.getTime() - (o.primaryLostSince ?? o.now).getTime();
  if (primary && !primaryUp && replicas.length > 0 && lostFor >= failoverTimeoutMs) {
    if (primary.pod && !primary.pod.deleting) return { kind: 'delete-pod', member: primary.name, reason: 'fenced before failover' };
    if (primary.pod && o.lease && !o.lease.expired) {
      return { kind: 'wait', reason: `primary ${primary.name} is going away; failing over once its pod is gone or its ` +
        `Lease expires`, requeueAfterMs: 1000 };
    }
    return { kind: 'failover', from: primary.name, candidates: replicas };
  }
  // The Lease names a member whose promotion did not finish (the operator stopped between the two).
  if (primary && primaryUp && primary.pod!.role !== 'primary') return { kind: 'finish-promotion', member: primary.name };

  const busy = members.find((m) => m.pod && (m.pod.deleting || m.pod.phase === 'Pending' ||
    (m.pod.phase === 'Running' && !m.pod.ready && m.name !== primaryName)));
  if (busy) {
    const state = busy.pod!.deleting ? 'going away' : busy.pod!.phase === 'Pending' ? 'Pending' : 'starting';
    return { kind: 'wait', reason: `member ${busy.name} is ${state}` };
  }
  if (o.strangers.length) return { kind: 'remove-stranger', pod: o.strangers[0]! };

  const broken = members.find((m) => dead(m));
  if (broken) return { kind: 'delete-pod', member: broken.name, reason: `its pod is ${broken.pod!.phase}` };
  const missing = members.find((m) => !m.pod);
  if (missing) {
    // The primary comes back on its own volume.
    const role: Role = missing.name === primaryName ? 'primary' : 'replica';
    if (role === 'replica' && !primaryUp) return { kind: 'wait', reason: `member ${missing.name} waits for a primary to clone from` };
    return { kind: 'start-member', member: missing.name, role };
  }
  if (!primaryUp) {
    const why = leaseHeld ? 'is not ready' : 'has not renewed its Lease';
    return { kind: 'wait', reason: `primary ${primaryName} ${why}; failing over to a ready ` +
      `replica after ${failoverTimeoutMs / 1000}s`, requeueAfterMs: Math.max(1000, failoverTimeoutMs - lostFor) };
  }
  const synchronous = synchronousStandbyNames(o, primaryName);
  if (synchronous !== o.synchronousStandbyNames) return { kind: 'set-synchronous', member: primaryName, value: synchronous };

  if (members.length < o.size) {
    return { kind: 'add-member', member: memberName(o.cluster, o.nextIndex) };
  }
  if (members.length > o.size) {
    const victim = [...members].reverse().find((m) => m.name !== primaryName)!;
    return { kind: 'remove-member', member: victim.name, deleteClaim: !o.keepVolumeOnScaleDown };
  }

  const outdated = members.filter((m) => m.pod!.version !== o.version);
  const replica = outdated.find((m) => m.name !== primaryName);
  if (replica) return { kind: 'upgrade-member', member: replica.name };
  if (outdated.length) {
    return replicas.length
      ? { kind: 'switchover', from: primaryName, candidates: replicas }
      : { kind: 'upgrade-member', member: primaryName };
  }
  return { kind: 'steady' };
}

/** The candidate that replayed the most WAL; ties go to the lowest-numbered member. */
export function bestCandidate(positions: { member: string; lsn: bigint }[]): string | undefined {
  return [...positions].sort((a, b) => (a.lsn === b.lsn ? a.member.localeCompare(b.member) : a.lsn > b.lsn ? -1 : 1))[0]?.member;
}
