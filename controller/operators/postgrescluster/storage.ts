// Growing the member volumes: storage.size may grow (a CEL rule refuses a shrink), and each member claim smaller than
// it is asked for the new size, as a StatefulSet's volumeClaimTemplates cannot. Whether a volume may grow is the
// StorageClass's to say (allowVolumeExpansion): the apiserver refuses the claim's change otherwise, and that refusal,
// in its own words, is what the StorageResized condition reports. New members are made at the new size either way.
import type { KubeObject } from '../../runtime/resources.ts';
import type { Condition } from '../../runtime/status.ts';
import { bytesOf } from './objects.ts';

type Pending = Omit<Condition, 'lastTransitionTime'>;

export interface Claim extends KubeObject {
  spec?: { resources?: { requests?: { storage?: string } }; storageClassName?: string };
  status?: { capacity?: { storage?: string }; conditions?: { type: string; status: string }[] };
}

const requested = (claim: Claim) => bytesOf(claim.spec?.resources?.requests?.storage ?? 0);
const capacity = (claim: Claim) => bytesOf(claim.status?.capacity?.storage ?? 0);

/** The member claims to ask for `size`: those asking for less. None ever shrinks. */
export const claimsToGrow = (claims: Claim[], size: string | number) =>
  claims.filter((claim) => requested(claim) < bytesOf(size));

/** The StorageResized condition: `refused` maps a claim to the apiserver's refusal of the size asked. */
export function storageCondition(claims: Claim[], size: string | number, refused: Map<string, string>,
  generation?: number): Pending {
  const base = { type: 'StorageResized', ...(generation === undefined ? {} : { observedGeneration: generation }) };
  const refusals = claims.filter((c) => refused.has(c.metadata.name));
  if (refusals.length) {
    const [first] = refusals;
    return { ...base, status: 'False', reason: 'ExpansionRefused', message: `${refusals.map((c) => c.metadata.name)
      .join(', ')} cannot grow to ${size}: ${refused.get(first!.metadata.name)} (StorageClass ` +
      `${first!.spec?.storageClassName ?? 'the default'}); they keep their size, and new members get ${size}` };
  }
  const short = claims.filter((c) => capacity(c) < bytesOf(size));
  if (short.length) {
    const restart = short.filter((c) => c.status?.conditions?.some((k) => k.type === 'FileSystemResizePending' &&
      k.status === 'True'));
    return { ...base, status: 'False', reason: 'Resizing', message: `${short.length} of ${claims.length} member ` +
      `volumes below ${size} yet (${short.map((c) => `${c.metadata.name} ${c.status?.capacity?.storage ?? 'unbound'}`)
        .join(', ')}): waiting for the storage provider${restart.length ? `; ${restart.map((c) => c.metadata.name)
        .join(', ')} grow${restart.length === 1 ? 's' : ''} its file system when the member's pod starts again` : ''}` };
  }
  return { ...base, status: 'True', reason: 'Resized', message: `every member volume has ${size} at least` };
}
