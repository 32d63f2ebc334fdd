// A PodAlert's status must stay far below etcd's 1.5 MiB object limit whatever the pod count and log sizes: the list
// is capped, each log tail gets a share of a fixed log budget, and what still does not fit loses log tails, oldest
// alert first, then the oldest alerts themselves (still counted in unhealthyPods).

export const maxListedAlerts = 50;
export const statusBudgetBytes = 512 * 1024;
const logBudgetBytes = 256 * 1024;
const longestLogTail = 65_536;

/** How many bytes of log each of `listed` alerts may carry. */
export function logShareBytes(listed: number): number {
  return Math.min(longestLogTail, Math.floor(logBudgetBytes / Math.max(listed, 1)));
}

export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

/** Drops log tails, from the end of `alerts` (the oldest) up, then alerts, until `size` of what is left fits `budget`. */
export function fitToBudget<T extends { logTail?: string; logError?: string }>(alerts: T[],
  size: (alerts: T[]) => number, budget = statusBudgetBytes): T[] {
  const fitted = [...alerts];
  for (let i = fitted.length - 1; i >= 0 && size(fitted) > budget; i--) {
    const { logTail, ...rest } = fitted[i]!;
    if (logTail !== undefined) fitted[i] = { ...rest, logError: 'log tail left out: the status is at its size budget' } as T;
  }
  while (fitted.length && size(fitted) > budget) fitted.pop();
  return fitted;
}

/** `text` cut to `max` characters, marked as cut: a schema's maxLength must never fail a status write. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
