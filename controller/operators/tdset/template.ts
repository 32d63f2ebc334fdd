// The pod template of the Deployment a TDSet owns, from spec.template: the user's, hardened where it says nothing,
// so that it is admitted where the restricted Pod Security Standard is enforced unless it asks otherwise.
import { restrictedContainerSecurity, restrictedPodSecurity } from '../../api/pod-security.ts';

type Json = Record<string, any>;

/** `template` with the restricted defaults under what it sets, and `labels` (the selector's) on its pods. */
export function hardenedTemplate(template: Json, labels: Record<string, string>): Json {
  const spec: Json = template.spec ?? {};
  const harden = (container: Json) => ({ ...container, securityContext: { ...restrictedContainerSecurity,
    ...container.securityContext, capabilities: { ...restrictedContainerSecurity.capabilities,
      ...container.securityContext?.capabilities } } });
  return {
    ...template,
    metadata: { ...template.metadata, labels: { ...template.metadata?.labels, ...labels } },
    spec: {
      ...spec,
      securityContext: { ...restrictedPodSecurity, ...spec.securityContext },
      containers: (spec.containers ?? []).map(harden),
      ...(spec.initContainers ? { initContainers: spec.initContainers.map(harden) } : {}),
    },
  };
}
