import type { Permission } from '../api/permissions.ts';

/** Events on reconciled objects, in every watched namespace. */
export const eventPermissions: Permission[] = [
  { group: 'events.k8s.io', resource: 'events', verbs: ['create', 'patch'],
    reason: 'record Events on reconciled objects (patch aggregates repeats)' },
];

/** The leader-election Lease, in the controller's own namespace only. */
export const leaderElectionPermissions: Permission[] = [
  { group: 'coordination.k8s.io', resource: 'leases', verbs: ['get', 'create', 'update'],
    reason: 'leader election: only one replica reconciles' },
];
