// The signal of the work in progress (a reconcile, a lease renewal) travels with the async context, so every API call
// made on its behalf is aborted with it, whichever helper makes the call, as a Go context would be.
import { AsyncLocalStorage } from 'node:async_hooks';

const current = new AsyncLocalStorage<AbortSignal>();

/** Runs `work` with `signal` as the signal of every API call it makes. */
export function withSignal<T>(signal: AbortSignal, work: () => Promise<T>): Promise<T> {
  return current.run(signal, work);
}

/** Runs `work` outside any caller's signal: for loops that outlive the call that started them (informers). */
export function detached<T>(work: () => T): T {
  return current.exit(work);
}

/** The signal of the work in progress, with `own` (a call's own signal) folded in. */
export function signalFor(own?: AbortSignal): AbortSignal | undefined {
  const ambient = current.getStore();
  if (!ambient || !own) return ambient ?? own;
  return AbortSignal.any([ambient, own]);
}
