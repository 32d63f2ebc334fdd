// The controller process: the runtime's flags (--controllers, --namespace, --leader-elect, ...; in the environment
// REPLICATOR_NAMESPACE and so on), under names of its own.
import { runController } from 'keelson/runtime';
import { configMapReplicator } from './operator.ts';

process.exitCode = await runController(process.argv.slice(2), process.env, [configMapReplicator], {
  leaseName: 'configmap-replicator-leader', fieldManager: 'configmap-replicator', userAgent: 'configmap-replicator',
  envPrefix: 'REPLICATOR',
});
