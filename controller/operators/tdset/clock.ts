// Local wall-clock time in an IANA zone, without a time zone library: Intl says what the clock shows at an instant,
// and the instant the clock first shows a given time is found from the zone's offsets around it.

const minuteMs = 60_000;
const hourMs = 60 * minuteMs;
export const dayMs = 24 * hourMs;
/** Zone offsets, and the daylight-saving shifts between them, fall on whole quarter hours of UTC. */
const quarterHourMs = 15 * minuteMs;

/** A day of the calendar (days since 1970-01-01) and a minute of it (0-1439), as a zone's wall clock shows them. */
export interface LocalTime {
  day: number;
  minute: number;
}

/** 0 for Sunday to 6 for Saturday; 1970-01-01 was a Thursday. */
export const weekdayOf = (day: number): number => (((day + 4) % 7) + 7) % 7;

/** The calendar day of a date written YYYY-MM-DD; NaN for one the calendar does not have (2026-02-30). */
export function dayOf(date: string): number {
  const day = Date.UTC(Number(date.slice(0, 4)), Number(date.slice(5, 7)) - 1, Number(date.slice(8, 10))) / dayMs;
  return Number.isInteger(day) && new Date(day * dayMs).toISOString().slice(0, 10) === date.slice(0, 10) ? day : NaN;
}

/** The minute of the day of a time written HH:MM. */
export const minuteOf = (time: string): number => Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5));

/**
 * One zone's clock. Made once per zone and kept, as its offsets are: a burst of TDSets in one zone formats a few
 * dates, not thousands (making formatters took 12% of Keelson's CPU in a burst: bench/results/before-after).
 */
export class ZoneClock {
  private static readonly clocks = new Map<string, ZoneClock>();
  private readonly format: Intl.DateTimeFormat;
  /** The offset in each quarter hour asked about; dropped whole when it grows large. */
  private readonly offsets = new Map<number, number>();

  /** The clock of `timeZone`; throws RangeError for a zone Intl does not know (nothing is kept then). */
  static of(timeZone: string): ZoneClock {
    let clock = ZoneClock.clocks.get(timeZone);
    if (!clock) {
      clock = new ZoneClock(timeZone);
      ZoneClock.clocks.set(timeZone, clock);
    }
    return clock;
  }

  private constructor(timeZone: string) {
    this.format = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: 'numeric',
      day: 'numeric', hour: 'numeric', minute: 'numeric' });
  }

  /** How far the wall clock is ahead of UTC at `instant`, in milliseconds. */
  offsetAt(instant: number): number {
    const quarter = Math.floor(instant / quarterHourMs);
    let offset = this.offsets.get(quarter);
    if (offset === undefined) {
      const start = quarter * quarterHourMs;
      const parts = Object.fromEntries(this.format.formatToParts(start).map((p) => [p.type, Number(p.value)]));
      offset = Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!) - start;
      if (this.offsets.size >= 4096) this.offsets.clear();
      this.offsets.set(quarter, offset);
    }
    return offset;
  }

  /** What the wall clock shows at `instant`. */
  localAt(instant: number): LocalTime {
    const wall = instant + this.offsetAt(instant);
    const day = Math.floor(wall / dayMs);
    return { day, minute: Math.floor((wall - day * dayMs) / minuteMs) };
  }

  /**
   * The first instant at which the wall clock shows `local` or later: in a repeated hour (autumn) its first
   * showing; in a skipped one (spring) the instant the clock jumps past it.
   */
  instantOf(local: LocalTime): number {
    const wall = local.day * dayMs + local.minute * minuteMs;
    const [earlier, later] = [this.offsetAt(wall - 15 * hourMs), this.offsetAt(wall + 15 * hourMs)];
    // No change of offset within fifteen hours either side, as on nearly every day: one instant shows it.
    if (earlier === later) return wall - earlier;
    const offsets = [earlier, later];
    const shown = offsets.map((offset) => wall - offset).filter((instant) => this.offsetAt(instant) === wall - instant);
    if (shown.length) return Math.min(...shown);
    // Skipped: the jump, on a quarter hour between the instants the two offsets would give, is the first quarter
    // hour at which the clock shows `local` or later.
    let low = Math.floor((wall - Math.max(...offsets)) / quarterHourMs);
    let high = Math.ceil((wall - Math.min(...offsets)) / quarterHourMs);
    while (low < high) {
      const middle = Math.floor((low + high) / 2);
      if (middle * quarterHourMs + this.offsetAt(middle * quarterHourMs) >= wall) high = middle;
      else low = middle + 1;
    }
    return high * quarterHourMs;
  }
}
