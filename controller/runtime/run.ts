// The controller process: flags, logging, configuration, signals, and a manager running the chosen operators.
import { parseControllerFlags, runtimeFlags, usage, type FlagSpec, type ProgramOptions } from '../api/flags.ts';
import { loadKubeConfig } from './kubeconfig.ts';
import { createLogger } from './log.ts';
import type { InformerOptions } from './informer.ts';
import { Manager, type ManagerOptions, type Operator } from './manager.ts';

/**
 * What a program other than Keelson's controller calls itself by (its Lease, field manager and User-Agent), and the
 * flags it reads beyond the runtime's, handed to its operators as `context.settings`.
 */
export interface Program<Extra extends string = never> extends Pick<ManagerOptions, 'leaseName' | 'fieldManager' | 'userAgent'> {
  flags?: Record<Extra, FlagSpec>;
  /** The runtime's flags' environment variables start with it. @default KEELSON */
  envPrefix?: string;
}

/** The informer settings the environment turns (tests shorten the watch's timeouts through them). */
function informerSettings(env: NodeJS.ProcessEnv): Partial<InformerOptions> {
  const silenceTimeoutMs = integerSetting(env, 'KEELSON_WATCH_SILENCE_TIMEOUT_MS', 1, 2 ** 31 - 1);
  // 0 would leave the watch's end to the apiserver (30 to 60 minutes), which the silence watchdog must know; a
  // negative timeout ends each watch at once, which tests use.
  const timeoutSeconds = integerSetting(env, 'KEELSON_WATCH_TIMEOUT_SECONDS', -86_400, 86_400);
  if (timeoutSeconds === 0) throw new Error('KEELSON_WATCH_TIMEOUT_SECONDS=0: expected seconds other than 0');
  return {
    ...(silenceTimeoutMs === undefined ? {} : { silenceTimeoutMs }),
    ...(timeoutSeconds === undefined ? {} : { watchTimeoutSeconds: () => timeoutSeconds }),
    ...(env.KEELSON_INITIAL_STATE === 'list' ? { initialState: 'list' as const } : {}),
  };
}

function integerSetting(env: NodeJS.ProcessEnv, name: string, least: number, most: number): number | undefined {
  const text = env[name];
  if (!text) return undefined;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < least || value > most) {
    throw new Error(`${name}=${text}: expected an integer from ${least} to ${most}`);
  }
  return value;
}

/** An operator whose code is loaded only when `--controllers` picks it: a process runs none of the others' code. */
export interface DeferredOperator<Settings = unknown> {
  name: string;
  load(): Promise<Operator<Settings>>;
}

/**
 * Runs the operators until SIGTERM or SIGINT, with the flags the install's args give (`--controllers` picks among
 * them); resolves with the process's exit code.
 */
export async function runController<Extra extends string = never>(argv: string[], env: NodeJS.ProcessEnv,
  operators: readonly (Operator<ProgramOptions<Extra>> | DeferredOperator<ProgramOptions<Extra>>)[],
  program: Program<Extra> = {}): Promise<number> {
  const { flags, envPrefix, ...names } = program;
  let options: ProgramOptions<Extra>;
  let informers: Partial<InformerOptions>;
  try {
    options = parseControllerFlags(argv, env, operators.map((o) => o.name), flags, envPrefix);
    informers = informerSettings(env);
  } catch (error) {
    process.stderr.write(`${(error as Error).message}\n\nflags:\n${usage({ ...runtimeFlags(envPrefix), ...flags })}\n`);
    return 2;
  }
  const log = createLogger(options.logLevel);
  const stop = new AbortController();
  const onSignal = (signal: NodeJS.Signals) => {
    log.info({ signal }, 'stopping');
    stop.abort();
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, onSignal);
  try {
    const chosen = await Promise.all(operators.filter((o) => options.controllers.includes(o.name))
      .map((o) => 'setup' in o ? o : o.load()));
    const manager = new Manager(await loadKubeConfig(options.kubeconfig), log, chosen,
      { ...options, ...names, ...(options.leaderElectionId ? { leaseName: options.leaderElectionId } : {}),
        identity: env.POD_NAME, informers, settings: options });
    return await manager.run(stop.signal);
  } catch (error) {
    log.fatal({ err: error }, 'controller failed');
    return 1;
  } finally {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) process.off(signal, onSignal);
  }
}
