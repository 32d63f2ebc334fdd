// Cron schedules as a CronJob takes them (five fields: minute, hour, day of month, month, day of week; lists, ranges,
// steps, names of months and days; @hourly and the like), read in UTC. Day of month and day of week, when both are
// restricted, match either, as cron has always done.
const macros: Record<string, string> = { '@yearly': '0 0 1 1 *', '@annually': '0 0 1 1 *', '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0', '@daily': '0 0 * * *', '@midnight': '0 0 * * *', '@hourly': '0 * * * *' };
const monthNames = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const dayNames = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

interface Field { values: Set<number>; restricted: boolean }

export interface Schedule {
  minute: Field;
  hour: Field;
  dayOfMonth: Field;
  month: Field;
  dayOfWeek: Field;
}

function field(text: string, min: number, max: number, names: string[] = [], nameBase = min): Field {
  const values = new Set<number>();
  const number = (part: string) => {
    const named = names.indexOf(part.toLowerCase());
    const value = named >= 0 ? named + nameBase : /^\d+$/.test(part) ? Number(part) : Number.NaN;
    if (!(value >= min && value <= max)) throw new Error(`"${part}" is not between ${min} and ${max}`);
    return value;
  };
  for (const item of text.split(',')) {
    const [range, stepText] = item.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new Error(`"${item}" has a step that is not a positive number`);
    const [from, to] = range === '*' ? [min, max] : range!.includes('-')
      ? range!.split('-').map(number) as [number, number] : [number(range!), stepText === undefined ? number(range!) : max];
    if (from > to) throw new Error(`"${item}" is a range that ends before it starts`);
    for (let v = from; v <= to; v += step) values.add(v);
  }
  return { values, restricted: text !== '*' && !text.startsWith('*/') };
}

/** The schedule `expression` says; throws with what is wrong. */
export function parseSchedule(expression: string): Schedule {
  const text = macros[expression.trim()] ?? expression.trim();
  const parts = text.split(/\s+/);
  if (parts.length !== 5) throw new Error(`"${expression}" has ${parts.length} fields; a schedule has five`);
  const dayOfWeek = field(parts[4]!, 0, 7, dayNames, 0);
  // 7 is Sunday too.
  if (dayOfWeek.values.delete(7)) dayOfWeek.values.add(0);
  return { minute: field(parts[0]!, 0, 59), hour: field(parts[1]!, 0, 23), dayOfMonth: field(parts[2]!, 1, 31),
    month: field(parts[3]!, 1, 12, monthNames, 1), dayOfWeek };
}

function dayMatches(s: Schedule, date: Date): boolean {
  const dom = s.dayOfMonth.values.has(date.getUTCDate());
  const dow = s.dayOfWeek.values.has(date.getUTCDay());
  if (s.dayOfMonth.restricted && s.dayOfWeek.restricted) return dom || dow;
  return dom && dow;
}

/** The last time at or before `atOrBefore` (to the minute) the schedule fired; undefined if none within five years. */
export function previousFire(s: Schedule, atOrBefore: Date): Date | undefined {
  const t = new Date(atOrBefore.getTime());
  t.setUTCSeconds(0, 0);
  const limit = atOrBefore.getTime() - 5 * 366 * 86_400_000;
  while (t.getTime() >= limit) {
    if (!s.month.values.has(t.getUTCMonth() + 1) || !dayMatches(s, t)) {
      t.setUTCHours(0, -1, 0, 0);
    } else if (!s.hour.values.has(t.getUTCHours())) {
      t.setUTCMinutes(-1, 0, 0);
    } else if (!s.minute.values.has(t.getUTCMinutes())) {
      t.setUTCMinutes(t.getUTCMinutes() - 1, 0, 0);
    } else {
      return t;
    }
  }
  return undefined;
}
