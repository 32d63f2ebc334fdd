// Pods that the restricted Pod Security Standard admits, whatever image they run: images default to root, which
// runAsNonRoot refuses, so they run as a user no image needs to know.

/** The user (and group) such pods run as. */
export const unprivilegedUser = 65532;

export const restrictedPodSecurity = { runAsNonRoot: true, runAsUser: unprivilegedUser, runAsGroup: unprivilegedUser,
  seccompProfile: { type: 'RuntimeDefault' } };

export const restrictedContainerSecurity = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };

/** Requests for the scheduler and a memory limit, for a small web container whose spec names none. */
export const smallContainerResources = { requests: { cpu: '10m', memory: '64Mi' }, limits: { memory: '256Mi' } };
