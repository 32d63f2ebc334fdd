import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { daysName, desiredAt, nextTransition, requeueDelay, scheduleOf, scheduleProblems } from './schedule.ts';
import type { TDSetSpec } from './schema.ts';

/** The seed's hourly windows, every day. */
const hourly = (timeZone: string, defaultReplica: number, windows: { startTime: number; endTime: number; replica: number }[]) =>
  scheduleOf({ timeZone, defaultReplica, schedulingConfig: windows });

const utc = (iso: string) => new Date(`${iso}Z`);

describe('TDSet schedule', () => {
  const officeWindows = [
    { startTime: 9, endTime: 17, replica: 5 },
    { startTime: 17, endTime: 19, replica: 3 },
    { startTime: 19, endTime: 0, replica: 2 },
    { startTime: 1, endTime: 7, replica: 2 },
  ];
  const officeHours = hourly('UTC', 4, officeWindows);

  it('gives every hour of the day its window, 23 and midnight included', () => {
    const expected = [4, 2, 2, 2, 2, 2, 2, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5, 3, 3, 2, 2, 2, 2, 2];
    const windows = ['default', ...Array(6).fill('1-7'), 'default', 'default', ...Array(8).fill('9-17'),
      '17-19', '17-19', ...Array(5).fill('19-0')];
    for (let hour = 0; hour < 24; hour++) {
      const at = utc(`2026-06-10T${String(hour).padStart(2, '0')}:30:00`);
      assert.deepEqual(desiredAt(officeHours, at), { replicas: expected[hour], window: windows[hour] }, `hour ${hour}`);
    }
  });

  it('wraps a window whose start is after its end past midnight', () => {
    const night = hourly('UTC', 3, [{ startTime: 22, endTime: 6, replica: 1 }]);
    for (let hour = 0; hour < 24; hour++) {
      const inside = hour >= 22 || hour < 6;
      assert.equal(desiredAt(night, utc(`2026-06-10T${String(hour).padStart(2, '0')}:00:00`)).replicas, inside ? 1 : 3,
        `hour ${hour}`);
    }
  });

  it('opens a window at its start hour and closes it at its end hour', () => {
    assert.equal(desiredAt(officeHours, utc('2026-06-10T08:59:59.999')).window, 'default');
    assert.equal(desiredAt(officeHours, utc('2026-06-10T09:00:00')).window, '9-17');
    assert.equal(desiredAt(officeHours, utc('2026-06-10T16:59:59.999')).window, '9-17');
    assert.equal(desiredAt(officeHours, utc('2026-06-10T17:00:00')).window, '17-19');
    assert.equal(desiredAt(officeHours, utc('2026-06-10T23:59:59.999')).window, '19-0');
    assert.equal(desiredAt(officeHours, utc('2026-06-11T00:00:00')).window, 'default');
  });

  it('finds the next transition at the next boundary where the window changes', () => {
    assert.deepEqual(nextTransition(officeHours, utc('2026-06-10T10:15:00')), utc('2026-06-10T17:00:00'));
    assert.deepEqual(nextTransition(officeHours, utc('2026-06-10T17:00:00')), utc('2026-06-10T19:00:00'));
    assert.deepEqual(nextTransition(officeHours, utc('2026-06-10T21:00:00')), utc('2026-06-11T00:00:00'));
    assert.deepEqual(nextTransition(officeHours, utc('2026-06-11T00:00:00')), utc('2026-06-11T01:00:00'));
    assert.equal(nextTransition(hourly('UTC', 4, []), utc('2026-06-10T10:15:00')), undefined);
  });

  it('follows daylight saving time: a skipped hour in spring, a repeated hour in autumn', () => {
    const berlin = hourly('Europe/Berlin', 1, [{ startTime: 2, endTime: 3, replica: 7 }]);
    // 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00 UTC); hour 2 never happens.
    for (const minute of ['00:30', '00:59', '01:00', '01:30']) {
      assert.equal(desiredAt(berlin, utc(`2026-03-29T${minute}:00`)).replicas, 1, `spring ${minute} UTC`);
    }
    // 2026-10-25: 03:00 CEST falls back to 02:00 CET (01:00 UTC); hour 2 happens twice, 00:00-02:00 UTC.
    assert.equal(desiredAt(berlin, utc('2026-10-24T23:59:00')).replicas, 1);
    assert.equal(desiredAt(berlin, utc('2026-10-25T00:30:00')).replicas, 7);
    assert.equal(desiredAt(berlin, utc('2026-10-25T01:30:00')).replicas, 7);
    assert.equal(desiredAt(berlin, utc('2026-10-25T02:00:00')).replicas, 1);
    assert.deepEqual(nextTransition(berlin, utc('2026-10-25T00:30:00')), utc('2026-10-25T02:00:00'));

    const morning = hourly('Europe/Berlin', 1, [{ startTime: 3, endTime: 9, replica: 4 }]);
    // 03:00 local on the spring day is 01:00 UTC (CEST), not 02:00 UTC as a fixed offset would say.
    assert.deepEqual(nextTransition(morning, utc('2026-03-29T00:30:00')), utc('2026-03-29T01:00:00'));
    assert.deepEqual(nextTransition(morning, utc('2026-03-28T00:30:00')), utc('2026-03-28T02:00:00'));
  });

  it('turns hours on the half hour in a zone offset by 5:30', () => {
    const kolkata = hourly('Asia/Kolkata', 1, [{ startTime: 9, endTime: 17, replica: 5 }]);
    assert.equal(desiredAt(kolkata, utc('2026-06-10T03:29:00')).replicas, 1);
    assert.equal(desiredAt(kolkata, utc('2026-06-10T03:30:00')).replicas, 5);
    assert.deepEqual(nextTransition(kolkata, utc('2026-06-10T03:00:00')), utc('2026-06-10T03:30:00'));
  });

  it('reports overlapping windows and unknown time zones, and accepts a full valid day', () => {
    assert.deepEqual(scheduleProblems(officeHours), []);
    assert.deepEqual(scheduleProblems(hourly('UTC', 4, [{ startTime: 9, endTime: 17, replica: 1 },
      { startTime: 16, endTime: 18, replica: 2 }])),
    ['spec.schedulingConfig[1]: window 16-18 overlaps window 9-17']);
    assert.deepEqual(scheduleProblems(hourly('UTC', 4, [{ startTime: 22, endTime: 6, replica: 1 },
      { startTime: 5, endTime: 7, replica: 2 }])),
    ['spec.schedulingConfig[1]: window 5-7 overlaps window 22-6']);
    assert.deepEqual(scheduleProblems(hourly('Mars/Olympus_Mons', 4, officeWindows)),
      ['spec.timeZone: "Mars/Olympus_Mons" is not a known IANA time zone']);
  });

  it('requeues just past the next boundary, or sooner when intervalMint asks', () => {
    const now = utc('2026-06-10T10:15:00');
    const next = nextTransition(officeHours, now);
    assert.equal(requeueDelay(next, undefined, now), 6.75 * 3_600_000 + 50);
    assert.equal(requeueDelay(next, 5, now), 5 * 60_000);
    assert.equal(requeueDelay(next, 1440, now), 6.75 * 3_600_000 + 50);
    assert.equal(requeueDelay(undefined, undefined, now), undefined);
    assert.equal(requeueDelay(undefined, 30, now), 30 * 60_000);
  });
});

describe('TDSet schedule by day and minute', () => {
  const week = (schedule: TDSetSpec['schedule'], extra: Partial<TDSetSpec> = {}) =>
    scheduleOf({ timeZone: 'Europe/Berlin', defaultReplica: 0, schedule, ...extra });
  const officeWindows: TDSetSpec['schedule'] = [{ days: ['Mon', 'Tue', 'Wed', 'Thu', 'Fri'], start: '07:30', end: '19:00',
    replicas: 5 }];
  const office = week(officeWindows);

  it('opens on weekdays at the minute, in the zone, across a daylight-saving change and a weekend', () => {
    // Friday 2026-03-27 is CET (UTC+1); Monday 2026-03-30, after the change on Sunday, is CEST (UTC+2).
    assert.deepEqual(desiredAt(office, utc('2026-03-27T06:29:59')), { replicas: 0, window: 'default' });
    assert.deepEqual(desiredAt(office, utc('2026-03-27T06:30:00')), { replicas: 5, window: 'Mon-Fri 07:30-19:00' });
    assert.deepEqual(nextTransition(office, utc('2026-03-27T06:30:00')), utc('2026-03-27T18:00:00'));
    // The weekend is the default, and the next change is Monday 07:30 CEST.
    assert.equal(desiredAt(office, utc('2026-03-28T12:00:00')).replicas, 0);
    assert.deepEqual(nextTransition(office, utc('2026-03-27T18:00:00')), utc('2026-03-30T05:30:00'));
    assert.equal(desiredAt(office, utc('2026-03-30T05:29:00')).replicas, 0);
    assert.equal(desiredAt(office, utc('2026-03-30T05:30:00')).replicas, 5);
  });

  it('runs a window whose end is not after its start into the next day, past a weekend\'s start', () => {
    const late = week([{ days: ['Fri'], start: '22:00', end: '02:00', replicas: 3 }]);
    assert.equal(desiredAt(late, utc('2026-06-12T19:59:00')).replicas, 0);
    assert.equal(desiredAt(late, utc('2026-06-12T20:00:00')).replicas, 3);
    // Saturday 01:59 CEST is still Friday's window; 02:00 is not; Thursday night never was.
    assert.equal(desiredAt(late, utc('2026-06-12T23:59:00')).replicas, 3);
    assert.equal(desiredAt(late, utc('2026-06-13T00:00:00')).replicas, 0);
    assert.equal(desiredAt(late, utc('2026-06-11T21:00:00')).replicas, 0);
    assert.deepEqual(nextTransition(late, utc('2026-06-13T00:00:00')), utc('2026-06-19T20:00:00'));
    // Every day, all day: nothing ever changes, and nothing is said to.
    const always = week([{ days: ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'], start: '00:00', end: '00:00', replicas: 2 }]);
    assert.equal(nextTransition(always, utc('2026-06-12T10:00:00')), undefined);
    const allDay = week([{ days: ['Sun'], start: '06:00', end: '06:00', replicas: 1 }]);
    assert.equal(desiredAt(allDay, utc('2026-06-15T03:59:00')).replicas, 1);
    assert.equal(desiredAt(allDay, utc('2026-06-15T04:00:00')).replicas, 0);
  });

  it('keeps a holiday, or a freeze of a few hours, whatever the windows say', () => {
    const holidays = week(officeWindows, { exceptions: [{ date: '2026-12-25', replicas: 0 },
      { from: '2026-12-28T12:00', to: '2026-12-28T14:00', replicas: 9 }] });
    // Friday 25 December, 10:00 CET.
    assert.deepEqual(desiredAt(holidays, utc('2026-12-25T09:00:00')), { replicas: 0, window: 'exception 2026-12-25' });
    assert.deepEqual(nextTransition(holidays, utc('2026-12-24T18:00:00')), utc('2026-12-24T23:00:00'));
    // The holiday ends at midnight, and the next window opens on Monday.
    assert.deepEqual(nextTransition(holidays, utc('2026-12-25T09:00:00')), utc('2026-12-25T23:00:00'));
    assert.deepEqual(nextTransition(holidays, utc('2026-12-25T23:00:00')), utc('2026-12-28T06:30:00'));
    assert.deepEqual(desiredAt(holidays, utc('2026-12-28T11:00:00')),
      { replicas: 9, window: 'exception 2026-12-28T12:00/2026-12-28T14:00' });
    assert.equal(desiredAt(holidays, utc('2026-12-28T13:00:00')).replicas, 5);
  });

  it('holds an override until its time, then follows the schedule again', () => {
    const woken = week(officeWindows, { override: { replicas: 2, until: '2026-06-13T15:00:00Z' } });
    assert.deepEqual(desiredAt(woken, utc('2026-06-13T10:00:00')), { replicas: 2, window: 'override' });
    assert.deepEqual(nextTransition(woken, utc('2026-06-13T10:00:00')), utc('2026-06-13T15:00:00'));
    assert.deepEqual(desiredAt(woken, utc('2026-06-13T15:00:00')), { replicas: 0, window: 'default' });
  });

  it('carries an autoscaler\'s maxReplicas with the stretch that gives them', () => {
    const bounded = week([{ ...officeWindows[0]!, maxReplicas: 20 }, { days: ['Sat'], start: '10:00', end: '12:00',
      replicas: 0, maxReplicas: 20 }], { defaultMaxReplicas: 3, exceptions: [{ date: '2026-12-25', replicas: 0 }],
    override: { replicas: 2, maxReplicas: 4, until: '2026-06-15T15:00:00Z' } });
    assert.deepEqual(desiredAt(bounded, utc('2026-06-12T10:00:00')), { replicas: 2, maxReplicas: 4, window: 'override' });
    assert.deepEqual(desiredAt(bounded, utc('2026-06-16T10:00:00')),
      { replicas: 5, maxReplicas: 20, window: 'Mon-Fri 07:30-19:00' });
    assert.deepEqual(desiredAt(bounded, utc('2026-06-16T20:00:00')), { replicas: 0, maxReplicas: 3, window: 'default' });
    // An exception that gives none leaves the autoscaler its own.
    assert.deepEqual(desiredAt(bounded, utc('2026-12-25T10:00:00')), { replicas: 0, window: 'exception 2026-12-25' });
    // Saturday 10:00 CEST asks for the default's 0 replicas, and another bound.
    assert.deepEqual(nextTransition(bounded, utc('2026-06-19T20:00:00')), utc('2026-06-20T08:00:00'));
    assert.deepEqual(desiredAt(bounded, utc('2026-06-20T08:00:00')), { replicas: 0, maxReplicas: 20, window: 'Sat 10:00-12:00' });
  });

  it('names days as people write them', () => {
    assert.equal(daysName([1, 2, 3, 4, 5]), 'Mon-Fri');
    assert.equal(daysName([6, 0]), 'Sat,Sun');
    assert.equal(daysName([1, 5, 6, 0]), 'Mon,Fri-Sun');
  });

  it('reports windows that overlap, past midnight and past the week\'s end too, and dates the calendar lacks', () => {
    const problems = (schedule: TDSetSpec['schedule'], extra: Partial<TDSetSpec> = {}) => scheduleProblems(week(schedule, extra));
    assert.deepEqual(problems([{ days: ['Mon'], start: '08:00', end: '10:00', replicas: 1 },
      { days: ['Mon', 'Tue'], start: '09:59', end: '11:00', replicas: 2 }]),
    ['spec.schedule[1]: window Mon,Tue 09:59-11:00 overlaps window Mon 08:00-10:00']);
    assert.deepEqual(problems([{ days: ['Sun'], start: '22:00', end: '02:00', replicas: 1 },
      { days: ['Mon'], start: '01:00', end: '03:00', replicas: 2 }]),
    ['spec.schedule[1]: window Mon 01:00-03:00 overlaps window Sun 22:00-02:00']);
    assert.deepEqual(problems([{ days: ['Fri'], start: '22:00', end: '02:00', replicas: 1 },
      { days: ['Sat'], start: '02:00', end: '03:00', replicas: 2 }]), []);
    assert.deepEqual(problems([], { exceptions: [{ date: '2026-02-30', replicas: 0 }] }),
      ['spec.exceptions[0]: not a date of the calendar']);
  });
});

