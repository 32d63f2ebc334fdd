import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { desiredAt, nextTransition, requeueDelay, scheduleProblems, type Schedule } from './schedule.ts';

const utc = (iso: string) => new Date(`${iso}Z`);

describe('TDSet schedule', () => {
  const officeHours: Schedule = {
    timeZone: 'UTC',
    defaultReplica: 4,
    windows: [
      { startTime: 9, endTime: 17, replica: 5 },
      { startTime: 17, endTime: 19, replica: 3 },
      { startTime: 19, endTime: 0, replica: 2 },
      { startTime: 1, endTime: 7, replica: 2 },
    ],
  };

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
    const night: Schedule = { timeZone: 'UTC', defaultReplica: 3, windows: [{ startTime: 22, endTime: 6, replica: 1 }] };
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
    assert.equal(nextTransition({ ...officeHours, windows: [] }, utc('2026-06-10T10:15:00')), undefined);
  });

  it('follows daylight saving time: a skipped hour in spring, a repeated hour in autumn', () => {
    const berlin: Schedule = { timeZone: 'Europe/Berlin', defaultReplica: 1, windows: [{ startTime: 2, endTime: 3, replica: 7 }] };
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

    const morning: Schedule = { timeZone: 'Europe/Berlin', defaultReplica: 1, windows: [{ startTime: 3, endTime: 9, replica: 4 }] };
    // 03:00 local on the spring day is 01:00 UTC (CEST), not 02:00 UTC as a fixed offset would say.
    assert.deepEqual(nextTransition(morning, utc('2026-03-29T00:30:00')), utc('2026-03-29T01:00:00'));
    assert.deepEqual(nextTransition(morning, utc('2026-03-28T00:30:00')), utc('2026-03-28T02:00:00'));
  });

  it('turns hours on the half hour in a zone offset by 5:30', () => {
    const kolkata: Schedule = { timeZone: 'Asia/Kolkata', defaultReplica: 1, windows: [{ startTime: 9, endTime: 17, replica: 5 }] };
    assert.equal(desiredAt(kolkata, utc('2026-06-10T03:29:00')).replicas, 1);
    assert.equal(desiredAt(kolkata, utc('2026-06-10T03:30:00')).replicas, 5);
    assert.deepEqual(nextTransition(kolkata, utc('2026-06-10T03:00:00')), utc('2026-06-10T03:30:00'));
  });

  it('reports overlapping windows and unknown time zones, and accepts a full valid day', () => {
    assert.deepEqual(scheduleProblems(officeHours), []);
    assert.deepEqual(scheduleProblems({ ...officeHours, windows: [{ startTime: 9, endTime: 17, replica: 1 },
      { startTime: 16, endTime: 18, replica: 2 }] }),
    ['spec.schedulingConfig[1]: window 16-18 overlaps window 9-17']);
    assert.deepEqual(scheduleProblems({ ...officeHours, windows: [{ startTime: 22, endTime: 6, replica: 1 },
      { startTime: 5, endTime: 7, replica: 2 }] }),
    ['spec.schedulingConfig[1]: window 5-7 overlaps window 22-6']);
    assert.deepEqual(scheduleProblems({ ...officeHours, timeZone: 'Mars/Olympus_Mons' }),
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
