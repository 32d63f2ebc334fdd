import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseDestinations, refusal } from './destination.ts';


// Pure checks of addresses: nothing here opens a connection.
describe('webhook destinations', () => {
  it('refuses by default loopback, private, carrier-grade NAT, ULA, NAT64, link-local and metadata addresses', () => {
    const policy = parseDestinations(undefined);
    for (const [address, what] of [['127.0.0.1', 'loopback'], ['::1', 'loopback'], ['10.96.0.1', 'private'],
      ['172.20.1.1', 'private'], ['192.168.1.1', 'private'], ['100.100.100.200', 'carrier-grade NAT'],
      ['fd00:ec2::254', 'unique local'], ['64:ff9b::a9fe:a9fe', 'NAT64'], ['169.254.169.254', 'link-local'],
      ['fe80::1', 'link-local'], ['::ffff:169.254.169.254', 'link-local'], ['::ffff:127.0.0.1', 'loopback'],
      ['0.0.0.0', 'this network'], ['224.0.0.1', 'multicast'], ['::ffff:a9fe:a9fe', 'link-local'],
      ['0:0:0:0:0:ffff:7f00:1', 'loopback'], ['2002:a00::1', '6to4'], ['2002:a00:1::', '6to4'], ['2002:c0a8::1', '6to4'],
      ['::a9fe:a9fe', 'IPv4-compatible'], ['::', 'unspecified'], ['::ffff:0:a00:1', 'IPv4-translated'],
      ['2001:0:4136:e378::1', 'Teredo'], ['100::1', 'discard'],
    ] as const) {
      assert.match(refusal(policy, address, address) ?? '', new RegExp(`: ${what}$`), address);
    }
    for (const address of ['198.51.100.1', '2001:db8::1', '8.8.8.8', '::ffff:203.0.113.9']) {
      assert.equal(refusal(policy, 'hooks.example', address), undefined, address);
    }
  });

  it('refuses names that only mean something inside the cluster, wherever they resolve', () => {
    const policy = parseDestinations(undefined);
    for (const host of ['keelson-controller-metrics', 'keelson-controller-metrics.keelson-system.svc',
      'api.default.svc.cluster.local', 'localhost', 'x.localhost', 'kubernetes.default.svc.']) {
      assert.equal(refusal(policy, host, '198.51.100.1'), 'a name inside the cluster', host);
    }
  });

  it('lets through what the list names, and only that unless it says public', () => {
    const policy = parseDestinations('alertmanager.monitoring.svc, 127.0.0.1, fd00::/8');
    assert.equal(refusal(policy, 'alertmanager.monitoring.svc', '10.96.3.4'), undefined);
    assert.equal(refusal(policy, '127.0.0.1', '127.0.0.1'), undefined);
    assert.equal(refusal(policy, 'internal.example', 'fd00::5'), undefined);
    assert.equal(refusal(policy, 'hooks.example', '198.51.100.1'), '198.51.100.1: not among the allowed destinations');
    assert.equal(refusal(policy, '127.0.0.2', '127.0.0.2'), '127.0.0.2: loopback');
    const withPublic = parseDestinations('public,10.0.0.0/8');
    assert.equal(refusal(withPublic, 'hooks.example', '198.51.100.1'), undefined);
    assert.equal(refusal(withPublic, 'internal.example', '10.1.2.3'), undefined);
    assert.equal(refusal(withPublic, 'internal.example', '192.168.0.1'), '192.168.0.1: private');
  });

  it('refuses the ranges an admin adds, public addresses though they are', () => {
    const policy = parseDestinations(undefined, '203.0.113.0/24, 2001:db8:42::/48');
    assert.equal(refusal(policy, 'svc.example', '203.0.113.10'), '203.0.113.10: one of the cluster\'s own ranges');
    assert.equal(refusal(policy, 'pod.example', '2001:db8:42::7'), '2001:db8:42::7: one of the cluster\'s own ranges');
    assert.equal(refusal(policy, 'hooks.example', '203.0.114.1'), undefined);
  });

  it('says which entry of a flag is malformed', () => {
    assert.throws(() => parseDestinations('10.0.0.0/33'), /allowed-destinations: "10\.0\.0\.0\/33" has no valid prefix/);
    assert.throws(() => parseDestinations('hooks.example/8'), /"hooks\.example\/8" is not a host nor a CIDR/);
    assert.throws(() => parseDestinations(undefined, 'hooks.example'), /refused-destinations: "hooks\.example" is not a CIDR/);
  });
});
