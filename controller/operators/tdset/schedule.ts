// Which window is open at a given instant, in a given time zone, and when that next changes.
// Hours are local to the zone; a window covers [startTime, endTime), wraps past midnight when startTime > endTime,
// and endTime 0 means midnight, so every hour (23 too) can be scheduled.

export interface Window {
  startTime: number;
  endTime: number;
  replica: number;
}

export interface Schedule {
  windows: readonly Window[];
  defaultReplica: number;
  timeZone: string;
}

export interface Desired {
  replicas: number;
  /** The window in force as "start-end", or "default". */
  window: string;
}

export const windowName = (w: Window): string => `${w.startTime}-${w.endTime}`;

/** The hours a window covers. */
export function hoursOf(w: Window): number[] {
  const hours: number[] = [];
  for (let h = w.startTime; h !== w.endTime; h = (h + 1) % 24) hours.push(h);
  return hours;
}

// Made once per zone, since making one took 12% of Keelson's CPU in a burst (bench/results/before-after). Only known
// zones are kept: an unknown one throws before it is stored.
const formatters = new Map<string, Intl.DateTimeFormat>();

function hourFormat(timeZone: string): Intl.DateTimeFormat {
  let format = formatters.get(timeZone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-US', { timeZone, hour: 'numeric', hourCycle: 'h23' });
    formatters.set(timeZone, format);
  }
  return format;
}

/** Why the schedule cannot be followed (overlapping windows, an unknown zone), or an empty list. */
export function scheduleProblems(schedule: Schedule): string[] {
  const problems: string[] = [];
  try {
    hourFormat(schedule.timeZone);
  } catch {
    problems.push(`spec.timeZone: "${schedule.timeZone}" is not a known IANA time zone`);
  }
  const owner = new Map<number, Window>();
  for (const [i, w] of schedule.windows.entries()) {
    if (w.startTime === w.endTime) {
      problems.push(`spec.schedulingConfig[${i}]: window ${windowName(w)} has zero length`);
      continue;
    }
    const clash = hoursOf(w).map((h) => owner.get(h)).find((other) => other !== undefined);
    if (clash) {
      problems.push(`spec.schedulingConfig[${i}]: window ${windowName(w)} overlaps window ${windowName(clash)}`);
      continue;
    }
    for (const h of hoursOf(w)) owner.set(h, w);
  }
  return problems;
}

/** The hour (0-23) on the wall clock of `timeZone` at `instant`. */
export function localHour(instant: Date, timeZone: string): number {
  return Number(hourFormat(timeZone).format(instant));
}

export function desiredAt(schedule: Schedule, instant: Date): Desired {
  const hour = localHour(instant, schedule.timeZone);
  const open = schedule.windows.find((w) => hoursOf(w).includes(hour));
  return open ? { replicas: open.replica, window: windowName(open) } : { replicas: schedule.defaultReplica, window: 'default' };
}

const quarterHour = 15 * 60_000;

/**
 * The first instant after `instant` at which the window in force changes, or undefined if it never does. Zone
 * offsets, and the daylight-saving shifts between them, fall on whole quarter hours of UTC, so local hours can
 * only turn at those instants.
 */
export function nextTransition(schedule: Schedule, instant: Date): Date | undefined {
  const now = desiredAt(schedule, instant).window;
  const first = Math.floor(instant.getTime() / quarterHour) * quarterHour + quarterHour;
  for (let t = first; t <= instant.getTime() + 49 * 3_600_000; t += quarterHour) {
    const at = new Date(t);
    if (desiredAt(schedule, at).window !== now) return at;
  }
  return undefined;
}

/**
 * How long until the next reconcile: just past the next boundary (so it sees the new window), or sooner when
 * `intervalMinutes` asks; undefined when neither applies.
 */
export function requeueDelay(next: Date | undefined, intervalMinutes: number | undefined, now: Date): number | undefined {
  const untilBoundary = next ? next.getTime() - now.getTime() + 50 : Infinity;
  const interval = intervalMinutes ? intervalMinutes * 60_000 : Infinity;
  const delay = Math.min(untilBoundary, interval);
  return Number.isFinite(delay) ? delay : undefined;
}
