// Which replicas a TDSet's schedule asks for at an instant, and when that next changes. Times are on the wall clock
// of the schedule's zone. A window opens on each of its days at the first instant the clock shows its start, and
// closes at the first instant it shows its end: the next day when the end is not after the start. So a start the
// clock skips in spring opens the window when the clock jumps past it, and no window opens twice in a repeated
// hour in autumn. Exceptions (holidays, freezes) come before windows, an override before both.
import { dayMs, dayOf, minuteOf, weekdayOf, ZoneClock, type LocalTime } from './clock.ts';
import { days as dayNames, type TDSetSpec } from './schema.ts';

export interface Window {
  /** Weekdays, 0 for Sunday. */
  days: readonly number[];
  /** Minutes of the day; the window runs past midnight when end is not after start. */
  start: number;
  end: number;
  replicas: number;
  /** The autoscaler's bound meanwhile, if the spec gives one. */
  maxReplicas?: number;
  /** As status shows it: "9-17" for an hourly window, "Mon-Fri 07:30-19:00" for one of spec.schedule. */
  name: string;
  /** Where the spec says it, for errors. */
  path: string;
}

export interface Exception {
  from: LocalTime;
  /** Not included. */
  to: LocalTime;
  replicas: number;
  maxReplicas?: number;
  name: string;
  path: string;
}

export interface Schedule {
  windows: readonly Window[];
  exceptions?: readonly Exception[];
  defaultReplicas: number;
  defaultMaxReplicas?: number;
  timeZone: string;
  /** Replicas asked for until an instant (ms), whatever the schedule says. */
  override?: { replicas: number; maxReplicas?: number; until: number };
}

export interface Desired {
  replicas: number;
  /** An autoscaler's maxReplicas, where the spec gives one. */
  maxReplicas?: number;
  /** What is in force: a window's name, "exception <date>", "override", or "default". */
  window: string;
}

/** Days as people write them: runs of three or more joined (Mon-Fri), the rest listed (Sat,Sun). */
export function daysName(days: readonly number[]): string {
  const sorted = [...new Set(days)].sort((a, b) => ((a + 6) % 7) - ((b + 6) % 7));
  const runs: number[][] = [];
  for (const day of sorted) {
    const run = runs.at(-1);
    if (run && (run.at(-1)! + 1) % 7 === day) run.push(day);
    else runs.push([day]);
  }
  return runs.flatMap((run) => run.length >= 3 ? [`${dayNames[run[0]!]}-${dayNames[run.at(-1)!]}`]
    : run.map((day) => dayNames[day]!)).join(',');
}

/** A local date (YYYY-MM-DD: its start; or its end, for the end of a range) or date and time (YYYY-MM-DDTHH:MM). */
const localOf = (value: string, end: boolean): LocalTime => value.length === 10
  ? { day: dayOf(value) + (end ? 1 : 0), minute: 0 } : { day: dayOf(value), minute: minuteOf(value.slice(11)) };

/** The schedule a TDSet's spec describes, with the seed's hourly windows or spec.schedule. */
export function scheduleOf(spec: Pick<TDSetSpec, 'schedulingConfig' | 'schedule' | 'exceptions' | 'defaultReplica' |
  'defaultMaxReplicas' | 'timeZone' | 'override'>): Schedule {
  const everyDay = [0, 1, 2, 3, 4, 5, 6];
  const windows: Window[] = spec.schedule
    ? spec.schedule.map((w, i) => ({ days: w.days.map((d) => dayNames.indexOf(d)), start: minuteOf(w.start),
      end: minuteOf(w.end), replicas: w.replicas, maxReplicas: w.maxReplicas, path: `spec.schedule[${i}]`,
      name: `${daysName(w.days.map((d) => dayNames.indexOf(d)))} ${w.start}-${w.end}` }))
    : (spec.schedulingConfig ?? []).map((w, i) => ({ days: everyDay, start: w.startTime * 60, end: w.endTime * 60,
      replicas: w.replica, name: `${w.startTime}-${w.endTime}`, path: `spec.schedulingConfig[${i}]` }));
  const exceptions = (spec.exceptions ?? []).map((e, i) => {
    const [from, to] = e.date ? [e.date, e.date] : [e.from ?? '', e.to ?? ''];
    return { from: localOf(from, false), to: localOf(to, true), replicas: e.replicas, maxReplicas: e.maxReplicas,
      path: `spec.exceptions[${i}]`,
      name: `exception ${e.date ?? `${from}/${to}`}` };
  });
  const until = spec.override ? Date.parse(spec.override.until) : NaN;
  return { windows, exceptions, defaultReplicas: spec.defaultReplica, defaultMaxReplicas: spec.defaultMaxReplicas,
    timeZone: spec.timeZone, ...(spec.override && !Number.isNaN(until)
      ? { override: { replicas: spec.override.replicas, maxReplicas: spec.override.maxReplicas, until } } : {}) };
}

/** Why the schedule cannot be followed (an unknown zone, overlapping windows, a date that is none), or nothing. */
export function scheduleProblems(schedule: Schedule): string[] {
  const problems: string[] = [];
  try {
    ZoneClock.of(schedule.timeZone);
  } catch {
    problems.push(`spec.timeZone: "${schedule.timeZone}" is not a known IANA time zone`);
  }
  // Each minute of the week, and the window that has it.
  const owner = new Array<Window | undefined>(7 * 1440);
  for (const w of schedule.windows) {
    const length = w.end > w.start ? w.end - w.start : 1440 - w.start + w.end;
    const minutes = w.days.flatMap((day) => Array.from({ length }, (_, i) => (day * 1440 + w.start + i) % (7 * 1440)));
    const clash = minutes.map((m) => owner[m]).find((other) => other !== undefined && other !== w);
    if (clash) {
      problems.push(`${w.path}: window ${w.name} overlaps window ${clash.name}`);
      continue;
    }
    for (const m of minutes) owner[m] = w;
  }
  for (const e of schedule.exceptions ?? []) {
    const real = [e.from, e.to].every((t) => Number.isFinite(t.day) && Number.isFinite(t.minute));
    if (!real) problems.push(`${e.path}: not a date of the calendar`);
    else if (e.to.day * 1440 + e.to.minute <= e.from.day * 1440 + e.from.minute) problems.push(`${e.path}: ends before it begins`);
  }
  return problems;
}

interface Span {
  from: number;
  to: number;
  replicas: number;
  maxReplicas?: number;
  name: string;
}

/** The exceptions, and the windows' openings from two days before `instant` to nine after, as instants. */
function spans(schedule: Schedule, instant: number): { exceptions: Span[]; windows: Span[] } {
  const clock = ZoneClock.of(schedule.timeZone);
  const today = clock.localAt(instant).day;
  const windows: Span[] = [];
  for (let day = today - 2; day <= today + 9; day++) {
    for (const w of schedule.windows.filter((w) => w.days.includes(weekdayOf(day)))) {
      const from = clock.instantOf({ day, minute: w.start });
      const to = clock.instantOf({ day: w.end > w.start ? day : day + 1, minute: w.end });
      if (to > from) windows.push({ from, to, replicas: w.replicas, maxReplicas: w.maxReplicas, name: w.name });
    }
  }
  const exceptions = (schedule.exceptions ?? []).map((e) => ({ from: clock.instantOf(e.from), to: clock.instantOf(e.to),
    replicas: e.replicas, maxReplicas: e.maxReplicas, name: e.name }));
  return { exceptions, windows };
}

function desiredFrom(schedule: Schedule, { exceptions, windows }: ReturnType<typeof spans>, instant: number): Desired {
  const { override } = schedule;
  // Exceptions in the order the spec lists them: the first wins where they overlap.
  const open = override && instant < override.until ? { ...override, name: 'override' }
    : exceptions.find((s) => s.from <= instant && instant < s.to) ?? windows.find((s) => s.from <= instant && instant < s.to);
  const { replicas, maxReplicas, name } = open ??
    { replicas: schedule.defaultReplicas, maxReplicas: schedule.defaultMaxReplicas, name: 'default' };
  return { replicas, window: name, ...(maxReplicas !== undefined ? { maxReplicas } : {}) };
}

export function desiredAt(schedule: Schedule, instant: Date): Desired {
  return desiredFrom(schedule, spans(schedule, instant.getTime()), instant.getTime());
}

/** The first instant after `instant` at which what is in force changes, or undefined if it never does. */
export function nextTransition(schedule: Schedule, instant: Date): Date | undefined {
  const now = instant.getTime();
  const all = spans(schedule, now);
  const current = desiredFrom(schedule, all, now);
  // A week repeats: a schedule whose windows change nothing for eight days never does, and the openings computed
  // end there (the last one's end is no change).
  const horizon = now + 8 * dayMs;
  const boundaries = [...all.windows.flatMap((s) => [s.from, s.to]).filter((b) => b < horizon),
    ...all.exceptions.flatMap((s) => [s.from, s.to]), ...(schedule.override ? [schedule.override.until] : [])]
    .filter((b) => b > now).sort((a, b) => a - b);
  const next = boundaries.find((b) => {
    const then = desiredFrom(schedule, all, b);
    // One window's bounds are the same wherever it is in force: its name and replicas tell every change.
    return then.window !== current.window || then.replicas !== current.replicas;
  });
  return next === undefined ? undefined : new Date(next);
}

/**
 * How long until the next reconcile: just past the next boundary (so it sees the new window), or sooner when
 * `intervalMinutes` asks; a day at most (a boundary months away is looked for again); undefined when neither applies.
 */
export function requeueDelay(next: Date | undefined, intervalMinutes: number | undefined, now: Date): number | undefined {
  const untilBoundary = next ? Math.min(next.getTime() - now.getTime() + 50, dayMs) : Infinity;
  const interval = intervalMinutes ? intervalMinutes * 60_000 : Infinity;
  const delay = Math.min(untilBoundary, interval);
  return Number.isFinite(delay) ? delay : undefined;
}

