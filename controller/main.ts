// The operator's entry point, in the image and under `npm run controller`.
import { keelsonFlags } from './api/flags.ts';
import { deferredOperators } from './operators/catalog.ts';
import { runController } from './runtime/run.ts';

process.exitCode = await runController(process.argv.slice(2), process.env, deferredOperators, { flags: keelsonFlags });
