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
const bound = (claim: Claim) => claim.status?.capacity?.storage !== undefined;

/** The member claims to ask for `size`: bound ones asking for less (a claim not bound yet cannot change). None shrinks. */
export const claimsToGrow = (claims: Claim[], size: string | number) =>
  claims.filter((claim) => bound(claim) && requested(claim) < bytesOf(size));

/** The StorageClass's refusal (the apiserver's PersistentVolumeClaimResize), or another (a quota, a webhook). */
export const refusalReason = (message: string) => /support resize/i.test(message) ? 'ExpansionRefused' : 'ResizeRefused';

/** The StorageResized condition: `refused` maps a claim to the apiserver's refusal of the size asked. */
export function storageCondition(claims: Claim[], size: string | number, refused: Map<string, string>,
  generation?: number): Pending {
  const base = { type: 'StorageResized', ...(generation === undefined ? {} : { observedGeneration: generation }) };
  const refusals = claims.filter((c) => refused.has(c.metadata.name));
  if (refusals.length) {
    const [first] = refusals;
    const message = refused.get(first!.metadata.name)!;
    const reason = refusalReason(message);
    const blamed = reason === 'ExpansionRefused' ? ` (StorageClass ${first!.spec?.storageClassName ?? 'of the claim'})` : '';
    return { ...base, status: 'False', reason, message: `${refusals.map((c) => c.metadata.name).join(', ')} cannot ` +
      `grow to ${size}: ${message}${blamed}; they keep their size, and new members get ${size}` };
  }
  // A claim not bound yet (a member being added) is made at the size: nothing to wait for.
  const short = claims.filter((c) => bound(c) && capacity(c) < bytesOf(size));
  if (short.length) {
    return { ...base, status: 'False', reason: 'Resizing', message: `${short.length} of ${claims.length} member ` +
      `volumes below ${size} yet (${short.map((c) => `${c.metadata.name} ${c.status!.capacity!.storage}`).join(', ')}): ` +
      'waiting for the storage provider; the claims\' conditions say how it goes' };
  }
  return { ...base, status: 'True', reason: 'Resized', message: `every member volume has ${size} at least` };
}
