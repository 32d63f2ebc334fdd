import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDestinations, refusal } from './destination.ts';

// Pure checks of addresses: nothing here opens a connection.
describe('webhook destinations', () => {
  it('refuses link-local addresses by default, in IPv4, IPv6 and IPv4-in-IPv6, and lets the rest go', () => {
    const open = parseDestinations(undefined);
    for (const address of ['169.254.169.254', 'fe80::1', '::ffff:169.254.169.254']) {
      assert.match(refusal(open, 'metadata.internal', address) ?? '', /link-local/, address);
    }
    assert.equal(refusal(open, 'hooks.example', '127.0.0.1'), undefined);
    assert.equal(refusal(open, 'hooks.example', '2001:db8::1'), undefined);
  });

  it('with a list, lets only its hosts (by name) and CIDRs through', () => {
    const policy = parseDestinations('hooks.example, 10.0.0.0/8, fd00::/8, 192.0.2.7');
    assert.equal(refusal(policy, 'HOOKS.example', '198.51.100.1'), undefined);
    assert.equal(refusal(policy, 'internal', '10.1.2.3'), undefined);
    assert.equal(refusal(policy, 'internal', 'fd00::5'), undefined);
    assert.equal(refusal(policy, 'internal', '192.0.2.7'), undefined);
    assert.match(refusal(policy, 'internal', '127.0.0.1')!, /127\.0\.0\.1 is not among the allowed/);
    assert.match(refusal(policy, 'internal', '169.254.169.254')!, /not among the allowed/);
  });

  it('says which entry of the flag is malformed', () => {
    assert.throws(() => parseDestinations('10.0.0.0/33'), /"10\.0\.0\.0\/33" has no valid prefix length/);
    assert.throws(() => parseDestinations('hooks.example/8'), /neither a host nor a CIDR/);
  });
});
