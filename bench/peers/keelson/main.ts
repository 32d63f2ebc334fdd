// Keelson's side of the benchmark: the image's entry point (controller/main.ts: the catalog's operators, each loaded
// only if it runs, and Keelson's flags), plus, with --controllers=tdset,podcache, a shared informer on every Pod
// keeping what PodAlert reads of each, loaded as lazily.
import { keelsonFlags } from '../../../controller/api/flags.ts';
import { deferredOperators } from '../../../controller/operators/catalog.ts';
import { runController } from '../../../controller/runtime/run.ts';

const podCache = { name: 'podcache', load: async () => (await import('./podcache.ts')).podCache };

process.exitCode = await runController(process.argv.slice(2), process.env, [...deferredOperators, podCache],
  { flags: keelsonFlags });
