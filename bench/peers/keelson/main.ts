// Keelson's side of the benchmark: the real controller (flags, manager, TDSet and PodAlert operators) as the image
// runs it, plus, with --controllers=tdset,podcache, a shared informer on every Pod keeping what PodAlert reads of each.
import type { Operator } from '../../../controller/runtime/manager.ts';
import { runController } from '../../../controller/runtime/run.ts';
import { types } from '../../../controller/runtime/resources.ts';
import { podViewFields } from '../../../controller/operators/podalert/health.ts';
import { podAlertOperator } from '../../../controller/operators/podalert/reconcile.ts';
import { tdsetOperator } from '../../../controller/operators/tdset/reconcile.ts';

const podCache: Operator = {
  name: 'podcache',
  permissions: [{ group: '', resource: 'pods', verbs: ['list', 'watch'], reason: 'hold every Pod in the cache' }],
  setup(ctx) {
    ctx.cache.informer(types.pods, ctx.namespace, ctx.client, { keep: podViewFields });
  },
};

process.exitCode = await runController(process.argv.slice(2), process.env, [tdsetOperator, podAlertOperator, podCache]);
