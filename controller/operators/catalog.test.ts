import assert from 'node:assert/strict';
import { it } from 'node:test';
import { catalog, deferredOperators } from './catalog.ts';

it('runs exactly the operators the install grants, with the permissions it grants', async () => {
  const operators = await Promise.all(deferredOperators.map((deferred) => deferred.load()));
  assert.deepEqual(operators.map((o) => o.name), catalog.map((e) => e.name));
  operators.forEach((operator, i) => {
    assert.equal(operator.permissions, catalog[i]!.permissions);
    // What an install's flags add (TDSet's custom scale targets) comes from one function for both.
    assert.equal(operator.configuredPermissions, catalog[i]!.configuredPermissions);
  });
});
