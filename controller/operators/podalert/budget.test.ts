import assert from 'node:assert/strict';
import { it } from 'node:test';
import { fitToBudget, jsonBytes, logShareBytes, maxListedAlerts, statusBudgetBytes } from './budget.ts';

it('keeps the most alerts with their longest logs far below etcd\'s limit, dropping the oldest tails first', () => {
  const share = logShareBytes(maxListedAlerts);
  const alerts: { pod: string; message: string; logTail?: string; logError?: string }[] = Array.from(
    { length: maxListedAlerts }, (_, i) => ({ pod: `pod-${i}`, message: 'm'.repeat(4096), logTail: 'l'.repeat(share) }));
  assert.ok(jsonBytes(alerts) < statusBudgetBytes, 'the log shares alone overflow the budget');
  const tight = fitToBudget(alerts, jsonBytes, 300_000);
  assert.ok(jsonBytes(tight) <= 300_000);
  assert.equal(tight.length, alerts.length);
  assert.equal(tight[0]!.logTail, alerts[0]!.logTail, 'the newest alert lost its log before the oldest');
  assert.equal(tight.at(-1)!.logTail, undefined);
  assert.match(tight.at(-1)!.logError!, /size budget/);
  const tiny = fitToBudget(alerts, jsonBytes, 50_000);
  assert.ok(jsonBytes(tiny) <= 50_000 && tiny.length > 0 && tiny[0]!.pod === 'pod-0');
});
