// The level-triggered loop's one decision, from what is observed now, as in the etcd operator: while any member is
// Pending or going away, wait; otherwise fix exactly one thing, in this order: pods that are not members, a dead
// replica, a lost primary (failover after a timeout), the size (one member per step), the minor version (replicas,
// then a switchover, then the old primary). Nothing here deletes data: volumes go only by scaling down, and only
// when the spec says so.

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
  | { kind: 'add-member'; member: string }
  | { kind: 'remove-member'; member: string; deleteClaim: boolean }
  | { kind: 'upgrade-member'; member: string }
  | { kind: 'switchover'; from: string; candidates: string[] }
  | { kind: 'steady' };

export const failoverTimeoutMs = 30_000;

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
 * The primary: the member whose live pod carries the primary role label (what the read-write Service selects, and
 * the first thing a promotion writes), a ready one first; else the one status recorded; else the seed.
 */
export function currentPrimary(o: Pick<Observed, 'members' | 'primary'>): string | undefined {
  const labelled = o.members.filter((m) => m.pod && !m.pod.deleting && m.pod.role === 'primary');
  return (labelled.find((m) => m.pod!.ready) ?? labelled[0])?.name ?? o.primary ??
    [...o.members].sort((a, b) => a.index - b.index)[0]?.name;
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

  // A primary gone or unready past the timeout is failed over even while its pod is still going away (a node that
  // died never confirms the deletion); before that, its pod is deleted, so it cannot take writes after the switch.
  const primaryUp = primary !== undefined && alive(primary) && primary.pod!.ready;
  const replicas = readyReplicas(members, primaryName);
  const lostFor = primaryUp ? 0 : o.now.getTime() - (o.primaryLostSince ?? o.now).getTime();
  if (primary && !primaryUp && replicas.length > 0 && lostFor >= failoverTimeoutMs) {
    if (primary.pod && !primary.pod.deleting) return { kind: 'delete-pod', member: primary.name, reason: 'fenced before failover' };
    return { kind: 'failover', from: primary.name, candidates: replicas };
  }

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
    return { kind: 'wait', reason: `primary ${primaryName} is not ready; failing over to a ready ` +
      `replica after ${failoverTimeoutMs / 1000}s`, requeueAfterMs: Math.max(1000, failoverTimeoutMs - lostFor) };
  }

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
