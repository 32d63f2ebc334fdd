// A controller's command line, defined once: the chart writes the Deployment's args with `controllerArgs`, the
// controller reads them with `parseControllerFlags`. The runtime's flags are every program's; a program adds its
// own (Keelson's are `keelsonFlags`). Each flag has an environment equivalent; flags win.
import { parseArgs } from 'node:util';

export const logLevels = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof logLevels)[number];

/** What the runtime reads from every program's command line. */
export interface RuntimeOptions {
  /** Operators to run, by name. */
  controllers: string[];
  /** The one namespace to watch; undefined for all. */
  namespace?: string;
  /** host:port for /metrics; "0" turns it off. */
  metricsBindAddress: string;
  /** Serve /metrics over HTTPS, to scrapers whose token may get /metrics only. */
  metricsSecure: boolean;
  /** Where tls.crt and tls.key for secure metrics are (a mounted Secret); default a self-signed certificate. */
  metricsCertDir?: string;
  /** host:port for /healthz and /readyz; "0" turns it off. */
  healthProbeBindAddress: string;
  leaderElect: boolean;
  /** Where the leader-election Lease lives; default the Pod's namespace. */
  leaderElectionNamespace?: string;
  /** The Lease's name; default the program's (keelson-controller-leader). */
  leaderElectionId?: string;
  kubeconfig?: string;
  logLevel: LogLevel;
}

export interface FlagSpec {
  flag: string;
  env: string;
  help: string;
}

/** The runtime's flags; their environment variables start with `envPrefix` (POD_NAMESPACE and KUBECONFIG aside). */
export function runtimeFlags(envPrefix = 'KEELSON'): Record<keyof RuntimeOptions, FlagSpec> {
  return {
    controllers: { flag: 'controllers', env: `${envPrefix}_CONTROLLERS`, help: 'comma-separated operators to run (default all)' },
    namespace: { flag: 'namespace', env: `${envPrefix}_NAMESPACE`, help: 'watch only this namespace (default all)' },
    metricsBindAddress: { flag: 'metrics-bind-address', env: `${envPrefix}_METRICS_BIND_ADDRESS`,
      help: 'address for /metrics, e.g. :8080; 0 turns it off (default :8080)' },
    metricsSecure: { flag: 'metrics-secure', env: `${envPrefix}_METRICS_SECURE`,
      help: 'serve /metrics over HTTPS to scrapers allowed to get /metrics, checked by TokenReview and ' +
        'SubjectAccessReview (default false)' },
    metricsCertDir: { flag: 'metrics-cert-dir', env: `${envPrefix}_METRICS_CERT_DIR`,
      help: 'directory with tls.crt and tls.key for secure metrics (default a self-signed certificate)' },
    healthProbeBindAddress: { flag: 'health-probe-bind-address', env: `${envPrefix}_HEALTH_PROBE_BIND_ADDRESS`,
      help: 'address for /healthz and /readyz; 0 turns it off (default :8081)' },
    leaderElect: { flag: 'leader-elect', env: `${envPrefix}_LEADER_ELECT`,
      help: 'take a coordination.k8s.io Lease so only one replica reconciles (default false)' },
    leaderElectionNamespace: { flag: 'leader-election-namespace', env: 'POD_NAMESPACE',
      help: 'namespace of the leader-election Lease (default the Pod\'s namespace)' },
    leaderElectionId: { flag: 'leader-election-id', env: `${envPrefix}_LEADER_ELECTION_ID`,
      help: 'name of the leader-election Lease: one per Deployment (default keelson-controller-leader)' },
    kubeconfig: { flag: 'kubeconfig', env: 'KUBECONFIG', help: 'kubeconfig file (default in-cluster configuration)' },
    logLevel: { flag: 'log-level', env: `${envPrefix}_LOG_LEVEL`, help: 'debug, info, warn or error (default info)' },
  };
}

/** The flags of Keelson's own operators. */
export const keelsonFlags = {
  webhookAllowedDestinations: { flag: 'webhook-allowed-destinations', env: 'KEELSON_WEBHOOK_ALLOWED_DESTINATIONS',
    help: 'PodAlert webhooks go only to these hosts, CIDRs and, with "public", public addresses, comma-separated ' +
      '(default public: loopback, private, link-local, NAT64 and in-cluster names refused)' },
  webhookRefusedDestinations: { flag: 'webhook-refused-destinations', env: 'KEELSON_WEBHOOK_REFUSED_DESTINATIONS',
    help: 'PodAlert webhooks never go to these CIDRs either: the cluster\'s Service and pod ranges when they are ' +
      'public addresses, comma-separated' },
  podBuggerToolAllowedProfiles: { flag: 'podbuggertool-allowed-profiles', env: 'KEELSON_PODBUGGERTOOL_ALLOWED_PROFILES',
    help: 'PodBuggerTool: the debug profiles any tool may use, comma-separated (default general,baseline,restricted)' },
  podBuggerToolAllowedImages: { flag: 'podbuggertool-allowed-images', env: 'KEELSON_PODBUGGERTOOL_ALLOWED_IMAGES',
    help: 'PodBuggerTool: debug images must start with one of these prefixes, comma-separated (default any image)' },
  tdsetScaleResources: { flag: 'tdset-scale-resources', env: 'KEELSON_TDSET_SCALE_RESOURCES',
    help: 'TDSet: custom resources with a scale subresource that a scaleTargetRef may name, as <resource>.<group>:<Kind>, ' +
      'comma-separated, e.g. widgets.example.com:Widget; the install grants their scale subresource (default none)' },
  podAlertLogTails: { flag: 'podalert-log-tails', env: 'KEELSON_PODALERT_LOG_TAILS',
    help: 'PodAlert: copy failing containers\' log tails into status and alerts; false turns it off (default true)' },
  postgresAgentImage: { flag: 'postgres-agent-image', env: 'KEELSON_POSTGRES_AGENT_IMAGE',
    help: 'PostgresCluster: the image of the member agent, the operator\'s own (default ghcr.io/keelson-dev/keelson-controller:<version>)' },
  postgresReplaceStuckAfter: { flag: 'postgres-replace-stuck-after', env: 'KEELSON_POSTGRES_REPLACE_STUCK_AFTER',
    help: 'PostgresCluster: seconds a member may be Pending, starting or going away before nothing waits for it, ' +
      'and a replica that cannot be scheduled is replaced by a new member (default 300)' },
  postgresSwitchoverOnDrain: { flag: 'postgres-switchover-on-drain', env: 'KEELSON_POSTGRES_SWITCHOVER_ON_DRAIN',
    help: 'PostgresCluster: watch Nodes, and switch a primary over off a cordoned node before a drain evicts it, ' +
      'which its PodDisruptionBudget refuses meanwhile (default true); false reads no Node, and a drain evicts a ' +
      'ready primary as any member, to be failed over' },
} satisfies Record<string, FlagSpec>;

/** A program's options: the runtime's, and its own flags' values. */
export type ProgramOptions<Extra extends string = never> = RuntimeOptions & { [K in Extra]?: string };

/** Keelson's controller's options. */
export type ControllerOptions = ProgramOptions<keyof typeof keelsonFlags>;

export function usage(specs: Record<string, FlagSpec>): string {
  return Object.values(specs).map((s) => `  --${s.flag.padEnd(28)} ${s.help} [$${s.env}]`).join('\n');
}

export function parseBoolean(name: string, value: string): boolean {
  if (['true', '1', 'yes'].includes(value)) return true;
  if (['false', '0', 'no'].includes(value)) return false;
  throw new Error(`--${name} takes true or false, not "${value}"`);
}

/**
 * Reads the runtime's flags and `extra`, then the environment, then defaults. Throws with a clear message on anything
 * unknown or malformed.
 */
export function parseControllerFlags<Extra extends string = never>(argv: string[], env: NodeJS.ProcessEnv,
  known: readonly string[], extra = {} as Record<Extra, FlagSpec>, envPrefix?: string): ProgramOptions<Extra> {
  const runtime = runtimeFlags(envPrefix);
  const specs: Record<string, FlagSpec> = { ...runtime, ...extra };
  const options = Object.fromEntries(Object.values(specs).map((s) => [s.flag, { type: 'string' as const }]));
  // Boolean flags stand alone (--leader-elect) or take a value (--leader-elect=false), as in controller-runtime.
  const booleans = [runtime.leaderElect.flag, runtime.metricsSecure.flag];
  const args = argv.map((arg) => booleans.includes(arg.slice(2)) ? `${arg}=true` : arg);
  const { values } = parseArgs({ args, options, strict: true, allowPositionals: false });
  const read = (key: string): string | undefined => {
    const spec = specs[key]!;
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
  const flag = (key: 'leaderElect' | 'metricsSecure') => {
    const value = read(key);
    return value === undefined ? false : parseBoolean(runtime[key].flag, value);
  };
  return {
    controllers,
    namespace: read('namespace'),
    metricsBindAddress: read('metricsBindAddress') ?? ':8080',
    metricsSecure: flag('metricsSecure'),
    metricsCertDir: read('metricsCertDir'),
    healthProbeBindAddress: read('healthProbeBindAddress') ?? ':8081',
    leaderElect: flag('leaderElect'),
    leaderElectionNamespace: read('leaderElectionNamespace'),
    leaderElectionId: read('leaderElectionId'),
    kubeconfig: read('kubeconfig'),
    logLevel: logLevel as LogLevel,
    ...Object.fromEntries(Object.keys(extra).map((key) => [key, read(key)])),
  } as ProgramOptions<Extra>;
}

/**
 * The args that make a controller run with `options`, by `specs` (the runtime's flags unless told); what
 * parseControllerFlags reads back.
 */
export function controllerArgs(options: Partial<Record<string, string | string[] | boolean>>,
  specs: Record<string, FlagSpec> = runtimeFlags()): string[] {
  const args: string[] = [];
  for (const [key, spec] of Object.entries(specs)) {
    const value = options[key];
    if (value === undefined || value === false) continue;
    if (value === true) args.push(`--${spec.flag}`);
    else args.push(`--${spec.flag}=${Array.isArray(value) ? value.join(',') : String(value)}`);
  }
  return args;
}
