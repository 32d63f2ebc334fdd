import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseSchedule, previousFire } from './cron.ts';

const previous = (expression: string, at: string) => previousFire(parseSchedule(expression), new Date(at))?.toISOString();

describe('backup schedules in cron syntax', () => {
  it('finds the last time it fired, at or before the time given', () => {
    assert.equal(previous('0 3 * * *', '2026-11-26T03:10:30Z'), '2026-11-26T03:00:00.000Z');
    assert.equal(previous('0 3 * * *', '2026-11-26T03:00:00Z'), '2026-11-26T03:00:00.000Z');
    assert.equal(previous('0 3 * * *', '2026-11-26T02:59:00Z'), '2026-11-25T03:00:00.000Z');
    assert.equal(previous('30 1 * * mon-fri', '2026-11-30T01:00:00Z'), '2026-11-27T01:30:00.000Z');
    assert.equal(previous('@monthly', '2027-01-01T00:00:00Z'), '2027-01-01T00:00:00.000Z');
    assert.equal(previous('*/15 * * * *', '2026-01-01T00:14:00Z'), '2026-01-01T00:00:00.000Z');
  });

  it('reads names, ranges, lists, steps, macros and Sunday as 0 or 7', () => {
    assert.equal(previous('0 0 * * 7', '2026-11-28T00:00:00Z'), '2026-11-22T00:00:00.000Z');
    assert.equal(previous('0 12 1,15 feb *', '2026-11-26T00:00:00Z'), '2026-02-15T12:00:00.000Z');
    assert.equal(previous('5/20 * * * *', '2026-11-26T02:35:10Z'), '2026-11-26T02:25:00.000Z');
    assert.equal(previous('@hourly', '2027-01-01T00:30:00Z'), '2027-01-01T00:00:00.000Z');
  });

  it('matches either day field when both are restricted, as cron does', () => {
    // The 1st of the month or any Monday: Monday 23 November is the last before the 26th.
    assert.equal(previous('0 0 1 * 1', '2026-11-26T00:00:00Z'), '2026-11-23T00:00:00.000Z');
    assert.equal(previous('0 0 31 2 *', '2026-12-31T00:00:00Z'), undefined);
  });

  it('says what is wrong with a schedule it cannot read', () => {
    assert.throws(() => parseSchedule('0 3 * *'), /has 4 fields; a schedule has five/);
    assert.throws(() => parseSchedule('61 3 * * *'), /"61" is not between 0 and 59/);
    assert.throws(() => parseSchedule('0 3 * * funday'), /"funday" is not between 0 and 7/);
    assert.throws(() => parseSchedule('*/0 * * * *'), /step that is not a positive number/);
    assert.throws(() => parseSchedule('5-1 * * * *'), /ends before it starts/);
  });
});
