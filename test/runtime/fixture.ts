// A minimal operator for the runtime's own tests: every ConfigMap labelled keelson.dev/fixture=source gets an owned
// ConfigMap <name>-mirror holding the same data. A source can make its reconcile fail ("fail" key), take its time
// ("sleepMs", cut short when the reconcile is aborted; "stubbornMs", not), come back ("requeueMs"), try to change
// the cached source ("mutate") or hold a finalizer that deletes its mirror first ("finalizer" key). Run as a process it is a
// controller like the real one: node fixture.js <controller flags>.
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Permission } from '../../controller/api/permissions.ts';
import type { ReconcileContext, Request } from '../../controller/runtime/controller.ts';
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

    async function reconcileSource(source: ConfigMap, request: Request, { log, signal }: ReconcileContext): Promise<void> {
      const data = source.data ?? {};
      if (data.sleepMs) await sleep(Number(data.sleepMs), undefined, { signal });
      if (data.stubbornMs) await sleep(Number(data.stubbornMs));
      if (data.fail) throw new Error(`asked to fail: ${data.fail}`);
      if (data.mutate) {
        try {
          (source.data as Record<string, string>).mutated = 'yes';
        } catch (error) {
          log.info({ err: (error as Error).message }, 'the cached source refused a change');
        }
      }
      const name = `${request.name}-mirror`;
      const owner = { ...source, apiVersion: 'v1', kind: 'ConfigMap', metadata: { ...source.metadata, uid: source.metadata.uid! } };
      const mirror = async () => {
        const { changed } = await applyIfChanged<ConfigMap>(client, types.configMaps, {
          apiVersion: 'v1', kind: 'ConfigMap',
          metadata: { name, namespace: request.namespace, ownerReferences: [controllerReference(owner)] },
          data,
        }, configMaps.get(keyOf({ namespace: request.namespace, name })));
        if (changed) events.record(owner, 'Normal', 'Mirrored', `mirrored into ${name}`);
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
    }

    addController({
      name: 'mirror',
      for: types.configMaps,
      owns: [types.configMaps],
      workers: 2,
      reconcileTimeoutMs: Number(process.env.FIXTURE_RECONCILE_TIMEOUT_MS ?? 120_000),
      async reconcile(request, context) {
        const source = configMaps.get(keyOf(request));
        if (source?.metadata.labels?.['keelson.dev/fixture'] !== 'source') {
          context.log.info({ present: Boolean(source) }, 'not a source');
          return;
        }
        context.log.info({ resourceVersion: source.metadata.resourceVersion }, 'reconcile started');
        try {
          await reconcileSource(source, request, context);
        } finally {
          context.log.info({ aborted: context.signal.aborted }, 'reconcile ended');
        }
        const requeueMs = Number(source.data?.requeueMs ?? 0);
        return requeueMs ? { requeueAfterMs: requeueMs } : undefined;
      },
    });
  },
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.exitCode = await runController(process.argv.slice(2), process.env, [mirror]);
}
