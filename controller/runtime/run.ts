// The controller process: flags, logging, configuration, signals, and a manager running the chosen operators.
import { parseControllerFlags, usage, type ControllerOptions } from '../api/flags.ts';
import { loadKubeConfig } from './kubeconfig.ts';
import { createLogger } from './log.ts';
import type { InformerOptions } from './informer.ts';
import { Manager, type Operator } from './manager.ts';

/** The informer settings the environment turns (tests shorten the watch's timeouts through them). */
function informerSettings(env: NodeJS.ProcessEnv): Partial<InformerOptions> {
  return {
    ...(env.KEELSON_WATCH_SILENCE_TIMEOUT_MS ? { silenceTimeoutMs: Number(env.KEELSON_WATCH_SILENCE_TIMEOUT_MS) } : {}),
    ...(env.KEELSON_WATCH_TIMEOUT_SECONDS ? { watchTimeoutSeconds: () => Number(env.KEELSON_WATCH_TIMEOUT_SECONDS) } : {}),
    ...(env.KEELSON_INITIAL_STATE === 'list' ? { initialState: 'list' as const } : {}),
  };
}

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
    const manager = new Manager(options, await loadKubeConfig(options.kubeconfig), log, chosen,
      { identity: env.POD_NAME, informers: informerSettings(env) });
    return await manager.run(stop.signal);
  } catch (error) {
    log.fatal({ err: error }, 'controller failed');
    return 1;
  }
}
