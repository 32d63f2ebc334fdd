// The controller's command line, defined once: the chart writes the Deployment's args with `controllerArgs`, the
// controller reads them with `parseControllerFlags`. Each flag has an environment equivalent; flags win.
import { parseArgs } from 'node:util';

export const logLevels = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof logLevels)[number];

export interface ControllerOptions {
  /** Operators to run, by catalog name. */
  controllers: string[];
  /** The one namespace to watch; undefined for all. */
  namespace?: string;
  /** host:port for /metrics; "0" turns it off. */
  metricsBindAddress: string;
  /** host:port for /healthz and /readyz; "0" turns it off. */
  healthProbeBindAddress: string;
  leaderElect: boolean;
  /** Where the leader-election Lease lives; default the Pod's namespace. */
  leaderElectionNamespace?: string;
  kubeconfig?: string;
  logLevel: LogLevel;
  /** PodAlert: the hosts and CIDRs webhooks may go to (comma-separated); default anywhere but link-local. */
  webhookAllowedDestinations?: string;
  /** PostgresCluster: the image member pods run their agent from; default the operator's own, as the build names it. */
  postgresAgentImage?: string;
}

interface FlagSpec {
  flag: string;
  env: string;
  help: string;
}

export const flagSpecs: Record<keyof ControllerOptions, FlagSpec> = {
  controllers: { flag: 'controllers', env: 'KEELSON_CONTROLLERS', help: 'comma-separated operators to run (default all)' },
  namespace: { flag: 'namespace', env: 'KEELSON_NAMESPACE', help: 'watch only this namespace (default all)' },
  metricsBindAddress: { flag: 'metrics-bind-address', env: 'KEELSON_METRICS_BIND_ADDRESS',
    help: 'address for /metrics, e.g. :8080; 0 turns it off (default :8080)' },
  healthProbeBindAddress: { flag: 'health-probe-bind-address', env: 'KEELSON_HEALTH_PROBE_BIND_ADDRESS',
    help: 'address for /healthz and /readyz; 0 turns it off (default :8081)' },
  leaderElect: { flag: 'leader-elect', env: 'KEELSON_LEADER_ELECT',
    help: 'take a coordination.k8s.io Lease so only one replica reconciles (default false)' },
  leaderElectionNamespace: { flag: 'leader-election-namespace', env: 'POD_NAMESPACE',
    help: 'namespace of the leader-election Lease (default the Pod\'s namespace)' },
  kubeconfig: { flag: 'kubeconfig', env: 'KUBECONFIG', help: 'kubeconfig file (default in-cluster configuration)' },
  logLevel: { flag: 'log-level', env: 'KEELSON_LOG_LEVEL', help: 'debug, info, warn or error (default info)' },
  webhookAllowedDestinations: { flag: 'webhook-allowed-destinations', env: 'KEELSON_WEBHOOK_ALLOWED_DESTINATIONS',
    help: 'PodAlert webhooks go only to these hosts and CIDRs, comma-separated (default anywhere but link-local)' },
  postgresAgentImage: { flag: 'postgres-agent-image', env: 'KEELSON_POSTGRES_AGENT_IMAGE',
    help: 'PostgresCluster: the image of the member agent, the operator\'s own (default keelson/controller:<version>)' },
};

export function usage(): string {
  return Object.values(flagSpecs).map((s) => `  --${s.flag.padEnd(28)} ${s.help} [$${s.env}]`).join('\n');
}

function parseBoolean(name: string, value: string): boolean {
  if (['true', '1', 'yes'].includes(value)) return true;
  if (['false', '0', 'no'].includes(value)) return false;
  throw new Error(`--${name} takes true or false, not "${value}"`);
}

const booleanFlags = new Set([flagSpecs.leaderElect.flag]);

/** Reads flags, then the environment, then defaults. Throws with a clear message on anything unknown or malformed. */
export function parseControllerFlags(argv: string[], env: NodeJS.ProcessEnv, known: readonly string[]):
ControllerOptions {
  const options = Object.fromEntries(Object.values(flagSpecs).map((s) => [s.flag, { type: 'string' as const }]));
  // Boolean flags stand alone (--leader-elect) or take a value (--leader-elect=false), as in controller-runtime.
  const args = argv.map((arg) => booleanFlags.has(arg.slice(2)) ? `${arg}=true` : arg);
  const { values } = parseArgs({ args, options, strict: true, allowPositionals: false });
  const read = (key: keyof ControllerOptions): string | undefined => {
    const spec = flagSpecs[key];
    const value = (values[spec.flag] as string | undefined) ?? env[spec.env];
    return value === '' ? undefined : value;
  };

  const controllers = read('controllers')?.split(',').map((c) => c.trim()).filter(Boolean) ?? [...known];
  const unknown = controllers.filter((c) => !known.includes(c));
  if (unknown.length) throw new Error(`--controllers: unknown ${unknown.join(', ')} (known: ${known.join(', ')})`);
  const logLevel = read('logLevel') ?? 'info';
  if (!(logLevels as readonly string[]).includes(logLevel)) {
    throw new Error(`--log-level must be one of ${logLevels.join(', ')}, not "${logLevel}"`);
  }
  const leaderElect = read('leaderElect');
  return {
    controllers,
    namespace: read('namespace'),
    metricsBindAddress: read('metricsBindAddress') ?? ':8080',
    healthProbeBindAddress: read('healthProbeBindAddress') ?? ':8081',
    leaderElect: leaderElect === undefined ? false : parseBoolean('leader-elect', leaderElect),
    leaderElectionNamespace: read('leaderElectionNamespace'),
    kubeconfig: read('kubeconfig'),
    logLevel: logLevel as LogLevel,
    webhookAllowedDestinations: read('webhookAllowedDestinations'),
    postgresAgentImage: read('postgresAgentImage'),
  };
}

/** The args that make the controller run with `options`; what parseControllerFlags reads back. */
export function controllerArgs(options: Partial<ControllerOptions>): string[] {
  const args: string[] = [];
  for (const [key, spec] of Object.entries(flagSpecs) as [keyof ControllerOptions, FlagSpec][]) {
    const value = options[key];
    if (value === undefined || value === false) continue;
    if (value === true) args.push(`--${spec.flag}`);
    else args.push(`--${spec.flag}=${Array.isArray(value) ? value.join(',') : String(value)}`);
  }
  return args;
}
