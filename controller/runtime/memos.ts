// What a reconciler remembers between reconciles is kept by the object's uid, so that an object deleted and made
// again under its name starts afresh. Kept by uid, it must also go when the object does, or a long-lived controller
// holds a little of every object it ever saw: these say which uid is gone, and drop what a memo holds of it.

/** The uid each object (by key) last had: tells which uid is gone once it is deleted, or made again under its name. */
export class UidsSeen {
  private readonly uids = new Map<string, string>();

  /** Records the uid `key` has now (undefined: gone) and returns the one it had before, if that one is gone. */
  now(key: string, uid: string | undefined): string | undefined {
    const before = this.uids.get(key);
    if (uid === undefined) this.uids.delete(key);
    else this.uids.set(key, uid);
    return before !== undefined && before !== uid ? before : undefined;
  }
}

/** Deletes what a memo holds of `uid`: the key `uid` itself and every `uid/...`. */
export function forgetUid(memo: Map<string, unknown> | Set<string>, uid: string): void {
  for (const key of memo.keys()) if (key === uid || key.startsWith(`${uid}/`)) memo.delete(key);
}
