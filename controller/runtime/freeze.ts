// Cached objects are shared by every reader: frozen, an accidental write throws instead of changing what the next
// reader sees and what the next comparison with the cluster trusts.

/** Freezes `value` and everything in it; returns it. */
export function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    // for...in, not Object.values: no array per object (JSON has no inherited enumerable keys).
    for (const key in value) deepFreeze(value[key]);
  }
  return value;
}
