import assert from 'node:assert/strict';
import { it } from 'node:test';
import { catalog } from './catalog.ts';
import { operators } from './registry.ts';

it('runs exactly the operators the install grants, with the permissions it grants', () => {
  assert.deepEqual(operators.map((o) => o.name), catalog.map((e) => e.name));
  for (const operator of operators) {
    assert.equal(operator.permissions, catalog.find((e) => e.name === operator.name)!.permissions);
  }
});
