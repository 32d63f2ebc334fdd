// Replicas that failed together must not retry together: every wait before a retry is stretched at random.

/** `ms` plus up to 20% more, never less: a backoff's floor holds. */
export function jittered(ms: number): number {
  return ms * (1 + Math.random() * 0.2);
}
