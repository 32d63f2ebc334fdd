// A switchover asked for by annotating the cluster with keelson.dev/switchover-to=<member>: the primary is stopped
// cleanly, which sends its last WAL to every replica that streams, and the member named is promoted if its WAL goes
// as far as any other's (else the one whose does, as in a failover). An imperative request, as CloudNativePG's
// `promote`, not a field of the spec: a failover later must not be undone by a spec that still names the old primary.
import type { Member } from './plan.ts';

export interface SwitchoverStatus {
  /** The member the annotation named (its first 80 characters). */
  to: string;
  phase: 'Pending' | 'Running' | 'Completed' | 'Failed';
  message: string;
}

export interface SwitchoverRequest {
  /** The ready replica to switch over to now, if any. */
  to?: string;
  /** What status.switchover says; undefined clears it (the annotation was removed). */
  status?: SwitchoverStatus;
}

/**
 * What a keelson.dev/switchover-to value asks for now. A request answered (Completed or Failed) for the same member
 * is not acted on again: remove the annotation, or name another member, to ask anew.
 */
export function switchoverRequest(asked: string | undefined, known: SwitchoverStatus | undefined, members: Member[],
  primary: string | undefined): SwitchoverRequest {
  if (asked === undefined) return {};
  const to = asked.slice(0, 80);
  if (known?.to === to && known.phase !== 'Pending') {
    // One under way when this process last looked, and not seen to its end: it is not begun again.
    if (known.phase !== 'Running') return { status: known };
    return { status: asked === primary ? { to, phase: 'Completed', message: `${asked} is the primary` }
      : { to, phase: 'Failed', message: 'the switchover was cut short before it was recorded; ask again' } };
  }
  const target = members.find((m) => m.name === asked);
  if (!target) {
    return { status: { to, phase: 'Failed', message: `no member is named "${to}": ` +
      `the members are ${members.map((m) => m.name).join(', ') || 'none yet'}` } };
  }
  if (asked === primary) return { status: { to, phase: 'Completed', message: `${asked} is the primary` } };
  if (!target.pod || target.pod.deleting || target.pod.role !== 'replica' || !target.pod.ready) {
    return { status: { to, phase: 'Pending', message: `waiting for ${asked} to be a ready replica` } };
  }
  // A drain would move the primary off it again.
  if (target.pod.cordoned) {
    return { status: { to, phase: 'Pending', message: `waiting for the node of ${asked} to be uncordoned` } };
  }
  return { to: asked, status: { to, phase: 'Pending', message: `switching over from ${primary} to ${asked} once ` +
    'nothing else is to be done, and enough replicas are ready to know one has every acknowledged commit' } };
}
