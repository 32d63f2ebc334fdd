import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { controllerArgs, keelsonFlags, parseControllerFlags as parseFlags, runtimeFlags } from './flags.ts';

const known = ['tdset', 'podalert'];
const parseControllerFlags = (argv: string[], env: NodeJS.ProcessEnv, names: string[]) =>
  parseFlags(argv, env, names, keelsonFlags);

describe('controller flags', () => {
  it('take defaults, then the environment, then flags', () => {
    const defaults = parseControllerFlags([], {}, known);
    assert.deepEqual(defaults, { controllers: known, namespace: undefined, metricsBindAddress: ':8080',
      metricsSecure: false, metricsCertDir: undefined, healthProbeBindAddress: ':8081', leaderElect: false,
      leaderElectionNamespace: undefined, leaderElectionId: undefined, kubeconfig: undefined,
      logLevel: 'info', webhookAllowedDestinations: undefined, webhookRefusedDestinations: undefined,
      podBuggerToolAllowedProfiles: undefined, podBuggerToolAllowedImages: undefined, tdsetScaleResources: undefined,
      podAlertLogTails: undefined, postgresAgentImage: undefined, postgresReplaceStuckAfter: undefined, postgresSwitchoverOnDrain: undefined });
    const env = { KEELSON_CONTROLLERS: 'tdset', KEELSON_LOG_LEVEL: 'warn', POD_NAMESPACE: 'ops', KUBECONFIG: '/k' };
    assert.deepEqual(parseControllerFlags([], env, known), { ...defaults, controllers: ['tdset'], logLevel: 'warn',
      leaderElectionNamespace: 'ops', kubeconfig: '/k' });
    assert.equal(parseControllerFlags(['--log-level=debug'], env, known).logLevel, 'debug');
  });

  it('read --leader-elect alone or with a value', () => {
    assert.equal(parseControllerFlags(['--leader-elect'], {}, known).leaderElect, true);
    assert.equal(parseControllerFlags(['--leader-elect=false'], {}, known).leaderElect, false);
    assert.equal(parseControllerFlags(['--metrics-secure'], {}, known).metricsSecure, true);
    assert.equal(parseControllerFlags([], { KEELSON_LEADER_ELECT: 'true' }, known).leaderElect, true);
    assert.throws(() => parseControllerFlags(['--leader-elect=maybe'], {}, known), /--leader-elect takes true or false/);
  });

  it('refuse what they do not know, saying what they do', () => {
    assert.throws(() => parseControllerFlags(['--controllers=tdset,nginx'], {}, known),
      /--controllers: unknown nginx \(known: tdset, podalert\)/);
    assert.throws(() => parseControllerFlags(['--log-level=loud'], {}, known), /--log-level must be one of debug, info/);
    assert.throws(() => parseControllerFlags(['--verbose'], {}, known), /Unknown option '--verbose'/);
  });

  it('take a program\'s own flags and environment prefix, and only those', () => {
    const own = { sourceNamespace: { flag: 'source-namespace', env: 'REPLICATOR_SOURCE_NAMESPACE', help: 'where from' } };
    const options = parseFlags(['--source-namespace=src'], { REPLICATOR_LOG_LEVEL: 'debug', KEELSON_LOG_LEVEL: 'error' },
      ['replicator'], own, 'REPLICATOR');
    assert.deepEqual([options.sourceNamespace, options.logLevel, options.controllers], ['src', 'debug', ['replicator']]);
    assert.throws(() => parseFlags(['--postgres-agent-image=x'], {}, ['replicator'], own),
      /Unknown option '--postgres-agent-image'/);
  });

  it('round-trip through controllerArgs', () => {
    const options = { controllers: ['podalert'], namespace: 'apps', metricsBindAddress: '127.0.0.1:0', metricsSecure: true,
      metricsCertDir: '/certs', healthProbeBindAddress: '0', leaderElect: true, leaderElectionNamespace: 'ops',
      leaderElectionId: 'keelson-pod-controller-leader', kubeconfig: '/k', logLevel: 'error' as const,
      webhookAllowedDestinations: 'hooks.example,10.0.0.0/8', webhookRefusedDestinations: '203.0.113.0/24',
      podBuggerToolAllowedProfiles: 'general', podBuggerToolAllowedImages: 'registry.corp/debug/', podAlertLogTails: 'false',
      tdsetScaleResources: 'widgets.example.com:Widget', postgresAgentImage: 'registry.example/keelson@sha256:ab', postgresReplaceStuckAfter: '600',
      postgresSwitchoverOnDrain: 'false' };
    assert.deepEqual(parseControllerFlags(controllerArgs(options, { ...runtimeFlags(), ...keelsonFlags }), {}, known), options);
    assert.deepEqual(controllerArgs({ leaderElect: false, logLevel: 'info' }), ['--log-level=info']);
  });
});
