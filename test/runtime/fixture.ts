// A minimal operator for the runtime's own tests: every ConfigMap labelled keelson.dev/fixture=source gets an owned
// ConfigMap <name>-mirror holding the same data. A source can make its reconcile fail ("fail" key), take its time
// ("sleepMs" key) or hold a finalizer that deletes its mirror first ("finalizer" key). Run as a process it is a
// controller like the real one: node fixture.js <controller flags>.
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Permission } from '../../controller/api/permissions.ts';
import type { Operator } from '../../controller/runtime/manager.ts';
import { withFinalizer } from '../../controller/runtime/finalizer.ts';
import { applyIfChanged, controllerReference } from '../../controller/runtime/objects.ts';
import { keyOf, types, type KubeObject } from '../../controller/runtime/resources.ts';
import { runController } from '../../controller/runtime/run.ts';

type ConfigMap = KubeObject & { data?: Record<string, string> };

export const fixturePermissions: Permission[] = [
  { group: '', resource: 'configmaps', verbs: ['list', 'watch', 'create', 'patch', 'delete'], reason: 'mirror sources' },
  { group: '', resource: 'configmaps/finalizers', verbs: ['update'], reason: 'blockOwnerDeletion on mirrors' },
];

export const mirror: Operator = {
  name: 'mirror',
  permissions: fixturePermissions,
  setup({ client, cache, events, namespace, addController }) {
    const configMaps = cache.informer<ConfigMap>(types.configMaps, namespace, client);
    addController({
      name: 'mirror',
      for: types.configMaps,
      owns: [types.configMaps],
      workers: 2,
      async reconcile(request, { log }) {
        const source = configMaps.get(keyOf(request));
        if (source?.metadata.labels?.['keelson.dev/fixture'] !== 'source') {
          log.info({ present: Boolean(source) }, 'not a source');
          return;
        }
        const data = source.data ?? {};
        log.info({ resourceVersion: source.metadata.resourceVersion }, 'reconcile started');
        if (data.sleepMs) await sleep(Number(data.sleepMs));
        if (data.fail) throw new Error(`asked to fail: ${data.fail}`);
        const name = `${request.name}-mirror`;
        const owner = { ...source, apiVersion: 'v1', kind: 'ConfigMap', metadata: { ...source.metadata, uid: source.metadata.uid! } };
        const mirror = async () => {
          const { changed } = await applyIfChanged<ConfigMap>(client, types.configMaps, {
            apiVersion: 'v1', kind: 'ConfigMap',
            metadata: { name, namespace: request.namespace, ownerReferences: [controllerReference(owner)] },
            data,
          }, configMaps.get(keyOf({ namespace: request.namespace, name })));
          if (changed) await events.record(owner, 'Normal', 'Mirrored', `mirrored into ${name}`);
          log.info({ resourceVersion: source.metadata.resourceVersion, changed }, 'reconciled');
        };
        if (!data.finalizer) return mirror();
        await withFinalizer(client, types.configMaps, source, 'keelson.dev/fixture', {
          apply: mirror,
          cleanup: async () => {
            await client.delete(types.configMaps, request.namespace, name);
            log.info('cleaned up');
          },
        });
      },
    });
  },
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exitCode = await runController(process.argv.slice(2), process.env, [mirror]);
}
