// What the churn scenario saw, as timestamps: when each pod turned unhealthy or went, and when the PodAlert's status
// first listed it and first left it out again. A status seen before the pod change it shows (two watches, two
// streams) counts as no delay.

export class ChurnLedger {
  private readonly unhealthyAt = new Map<string, number>();
  private readonly goneAt = new Map<string, number>();
  private readonly listedAt = new Map<string, number>();
  private readonly unlistedAt = new Map<string, number>();

  podUnhealthy(pod: string, at: number): void {
    if (!this.unhealthyAt.has(pod)) this.unhealthyAt.set(pod, at);
  }

  podGone(pod: string, at: number): void {
    if (!this.goneAt.has(pod)) this.goneAt.set(pod, at);
  }

  /** One status as written: the pods its alerts list. */
  statusSeen(listed: ReadonlySet<string>, at: number): void {
    for (const pod of listed) if (!this.listedAt.has(pod)) this.listedAt.set(pod, at);
    for (const pod of this.listedAt.keys()) {
      if (!listed.has(pod) && !this.unlistedAt.has(pod)) this.unlistedAt.set(pod, at);
    }
  }

  /** Changes the status has not shown yet: an unhealthy pod not listed, or a listed pod gone but still listed. */
  get pending(): number {
    let count = 0;
    for (const pod of this.unhealthyAt.keys()) if (!this.listedAt.has(pod)) count++;
    for (const pod of this.goneAt.keys()) if (this.listedAt.has(pod) && !this.unlistedAt.has(pod)) count++;
    return count;
  }

  /** From each pod change to the status showing it, in the units given. */
  delays(): number[] {
    const delay = (changed: Map<string, number>, shown: Map<string, number>) => [...changed]
      .flatMap(([pod, at]) => (shown.has(pod) ? [Math.max(0, shown.get(pod)! - at)] : []));
    return [...delay(this.unhealthyAt, this.listedAt),
      ...delay(new Map([...this.goneAt].filter(([pod]) => this.listedAt.has(pod))), this.unlistedAt)];
  }
}
