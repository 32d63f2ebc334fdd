import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matches, selectorString } from '../../runtime/selectors.ts';
import { containerName, imageBaseName, parseDebugPolicy, policyRefusal, refusalOf, securityContextFor, selectorOf } from './debug.ts';

const dnsLabel = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

describe('PodBuggerTool debug containers', () => {
  const images = [
    'busybox', 'busybox:1.36', 'library/busybox:latest', 'docker.io/library/busybox:1.36.1',
    'registry.local:5000/tools/busybox:1.36', 'registry.local:5000/tools/busybox',
    'ghcr.io/org/team/netshoot@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
    'registry.local:5000/tools/netshoot:v0.13@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
    'localhost/UPPER_Case.Image:Tag_1', '[::1]:5000/debug/tools:1', 'a'.repeat(120) + ':x',
    'quay.io/ephemeral-debug/my.tool_with.dots:2024.01',
  ];

  it('names the container as a valid DNS-1123 label for any image reference', () => {
    for (const image of images) {
      for (const tool of ['debug-course', 'x', 'a.very.long.podbuggertool.name.that-keeps-going.and-going.and-going-on']) {
        const name = containerName(tool, image);
        assert.match(name, dnsLabel, `${tool} + ${image} gave ${name}`);
        assert.equal(containerName(tool, image), name, 'not deterministic');
      }
    }
  });

  it('says which tool added which image, and never lets two tools or images collide', () => {
    assert.match(containerName('debug-course', 'registry.local:5000/tools/busybox:1.36'), /^debug-course-busybox-[0-9a-f]{6}$/);
    const names = new Set(images.flatMap((image) => ['one', 'two'].map((tool) => containerName(tool, image))));
    assert.equal(names.size, images.length * 2);
    assert.notEqual(containerName('t', 'busybox:1.35'), containerName('t', 'busybox:1.36'));
  });

  it('strips registry, path, tag and digest from the image name', () => {
    assert.equal(imageBaseName('registry.local:5000/tools/busybox:1.36@sha256:abc'), 'busybox');
    assert.equal(imageBaseName('busybox'), 'busybox');
    assert.equal(imageBaseName('[::1]:5000/debug/tools:1'), 'tools');
  });

  it('reads the label form and the selector form, and matches pods by them', () => {
    assert.deepEqual(selectorOf({ label: 'app=teachstore-course' }), { matchLabels: { app: 'teachstore-course' } });
    assert.deepEqual(selectorOf({ label: 'example.com/tier=' }), { matchLabels: { 'example.com/tier': '' } });
    const selector = selectorOf({ selector: { matchLabels: { app: 'web' }, matchExpressions: [
      { key: 'tier', operator: 'In', values: ['a', 'b'] }, { key: 'legacy', operator: 'DoesNotExist' },
      { key: 'track', operator: 'NotIn', values: ['canary'] }, { key: 'team', operator: 'Exists' }] } });
    assert.equal(selectorString(selector), 'app=web,tier in (a,b),!legacy,track notin (canary),team');
    assert.ok(matches(selector, { app: 'web', tier: 'a', team: 'x' }));
    assert.ok(!matches(selector, { app: 'web', tier: 'c', team: 'x' }));
    assert.ok(!matches(selector, { app: 'web', tier: 'a', team: 'x', legacy: 'yes' }));
    assert.ok(!matches(selector, { app: 'web', tier: 'a', team: 'x', track: 'canary' }));
    assert.ok(!matches(selector, { app: 'web', tier: 'a' }));
  });

  it('applies the security profiles as kubectl debug does', () => {
    assert.deepEqual(securityContextFor('general'), { capabilities: { add: ['SYS_PTRACE'] } });
    assert.equal(securityContextFor('baseline'), undefined);
    assert.deepEqual(securityContextFor('restricted'), { runAsNonRoot: true, allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } });
    assert.deepEqual(securityContextFor('netadmin'), { capabilities: { add: ['NET_ADMIN', 'NET_RAW'] } });
    assert.deepEqual(securityContextFor('sysadmin'), { privileged: true });
  });

  it('reports what the apiserver would refuse again, and retries a stale pod, throttling and server errors', () => {
    for (const status of [400, 403, 422]) assert.equal(refusalOf({ status, message: 'no' }), 'no');
    for (const status of [404, 409, 429, 500, 503]) assert.equal(refusalOf({ status, message: 'later' }), undefined);
  });

  it('allows by default every profile but netadmin and sysadmin, and any image', () => {
    const policy = parseDebugPolicy(undefined, undefined);
    assert.deepEqual(policy, { profiles: ['general', 'baseline', 'restricted'], imagePrefixes: [] });
    assert.equal(policyRefusal(policy, { profile: 'general', image: 'anything/at:all' }), undefined);
    assert.equal(policyRefusal(policy, { profile: 'sysadmin', image: 'busybox' })?.reason, 'ProfileNotAllowed');
    assert.throws(() => parseDebugPolicy('general,root', undefined), /unknown root \(known: general, baseline/);
  });

  it('matches image prefixes only at a boundary of the reference', () => {
    const policy = parseDebugPolicy('general', 'registry.corp/debug, busybox');
    for (const image of ['registry.corp/debug/busybox:1', 'registry.corp/debug:1', 'busybox', 'busybox:1.36',
      'busybox@sha256:00', 'docker.io/library/busybox:1.36', 'library/busybox:1']) {
      assert.equal(policyRefusal(policy, { profile: 'general', image }), undefined, image);
    }
    for (const image of ['registry.corp/debugger/x', 'registry.corp.evil/debug/x', 'busyboxx:1', 'evil/busybox',
      'busybox/evil:1', 'busybox:5000/x', 'docker.io/busybox/evil']) {
      assert.equal(policyRefusal(policy, { profile: 'general', image })?.reason, 'ImageNotAllowed', image);
    }
  });
});
