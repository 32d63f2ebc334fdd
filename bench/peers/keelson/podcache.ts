// The benchmark's pod-watching load: a shared informer on every Pod, keeping what PodAlert reads of each.
import type { Operator } from '../../../controller/runtime/manager.ts';
import { types } from '../../../controller/runtime/resources.ts';
import { podViewFields } from '../../../controller/operators/podalert/health.ts';

export const podCache: Operator = {
  name: 'podcache',
  permissions: [{ group: '', resource: 'pods', verbs: ['list', 'watch'], reason: 'hold every Pod in the cache' }],
  setup(ctx) {
    ctx.cache.informer(types.pods, ctx.namespace, ctx.client, { keep: podViewFields });
  },
};
