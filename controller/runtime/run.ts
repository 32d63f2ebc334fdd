// The controller process: flags, logging, configuration, signals, and a manager running the chosen operators.
import { parseControllerFlags, usage, type ControllerOptions } from '../api/flags.ts';
import { loadKubeConfig } from './kubeconfig.ts';
import { createLogger } from './log.ts';
import { Manager, type Operator } from './manager.ts';

/** Runs until SIGTERM or SIGINT; resolves with the process's exit code. */
export async function runController(argv: string[], env: NodeJS.ProcessEnv, operators: readonly Operator[]):
Promise<number> {
  let options: ControllerOptions;
  try {
    options = parseControllerFlags(argv, env, operators.map((o) => o.name));
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\nflags:\n${usage()}\n`);
    return 2;
  }
  const log = createLogger(options.logLevel);
  const stop = new AbortController();
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      log.info({ signal }, 'stopping');
      stop.abort();
    });
  }
  try {
    const chosen = operators.filter((o) => options.controllers.includes(o.name));
    const manager = new Manager(options, await loadKubeConfig(options.kubeconfig), log, chosen);
    return await manager.run(stop.signal);
  } catch (error) {
    log.fatal({ err: error }, 'controller failed');
    return 1;
  }
}
