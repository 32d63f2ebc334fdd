// The manager runs operators: it owns the client, the shared cache, the metrics and health servers and leader
// election, starts each operator's controllers once the caches have synced (and, electing a leader, once this
// process leads), and on shutdown stops taking work, lets reconciles in flight finish, and releases the lease.
import { readFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join } from 'node:path';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Permission } from '../api/permissions.ts';
import { Cache } from './cache.ts';
import { defaultInformerOptions, type InformerOptions } from './informer.ts';
import { Client } from './client.ts';
import { Controller, type ControllerSpec } from './controller.ts';
import { EventRecorder } from './events.ts';
import { LeaderElector } from './leader.ts';
import { Metrics } from './metrics.ts';
import { eventPermissions, leaderElectionPermissions } from './permissions.ts';
import { RestClient } from './rest.ts';
import { boundPort, serveHealth, serveMetrics, type SecureServing } from './servers.ts';
import { selfSignedCertificate } from './certificate.ts';
import { MetricsAuthorizer, metricsAuthPermissions } from './metrics-auth.ts';

/** What an operator gets to work with: only the calls it declared, and the shared cache. */
export interface OperatorContext<Settings = unknown> {
  client: Client;
  cache: Cache;
  events: EventRecorder;
  metrics: Metrics;
  log: Logger;
  /** The one namespace watched, or undefined for all. */
  namespace: string | undefined;
  /** The program's own settings for its operators (Keelson passes its flags). */
  settings: Settings;
  addController(spec: ControllerSpec): Controller;
}

export interface Operator<Settings = unknown> {
  name: string;
  /** Every API call it makes; its client refuses any other, and the install's RBAC grants exactly these. */
  permissions: readonly Permission[];
  /**
   * It reconciles a cluster-scoped kind, which one controller must own: it is left out, with a warning, of a manager
   * watching one namespace (there, another install's controller may own the same objects).
   */
  everyNamespace?: boolean;
  /** Calls it makes only as its program's settings ask (a resource an install names): declared as `permissions` are. */
  configuredPermissions?(settings: Settings): readonly Permission[];
  setup(context: OperatorContext<Settings>): void;
}

/** How a manager runs, and what it names itself by: Keelson's names unless a program of another name sets its own. */
export interface ManagerOptions<Settings = undefined> {
  /** The one namespace to watch. @default every namespace */
  namespace?: string;
  /** host:port of /metrics; "0" turns it off. @default :8080 */
  metricsBindAddress?: string;
  /** /metrics over HTTPS, to scrapers allowed to get /metrics only (TokenReview, SubjectAccessReview). @default false */
  metricsSecure?: boolean;
  /** tls.crt and tls.key for secure metrics. @default a self-signed certificate made at start */
  metricsCertDir?: string;
  /** host:port of /healthz and /readyz; "0" turns them off. @default :8081 */
  healthProbeBindAddress?: string;
  /** Reconcile only while holding a coordination.k8s.io Lease, so one replica works at a time. @default false */
  leaderElect?: boolean;
  /** Where that Lease lives (the pod's own namespace, as a rule). Required with leaderElect. */
  leaderElectionNamespace?: string;
  /** The Lease leader election holds. @default keelson-controller-leader */
  leaseName?: string;
  /** The field manager of its writes; each operator writes as `<fieldManager>-<operator>`. @default keelson */
  fieldManager?: string;
  /** Its requests' User-Agent, before `/<identity>`. @default keelson */
  userAgent?: string;
  /** This replica, in the Lease and in Events' reporting instance. @default the host name and a random suffix */
  identity?: string;
  /** How its informers watch, where not as defaultInformerOptions says. */
  informers?: Partial<InformerOptions>;
  /** Handed to every operator as `context.settings`. */
  settings?: Settings;
}

const shutdownTimeoutMs = 25_000;
/**
 * How long a shutdown waits, after the reconciles, for Events still queued to be written: at most 3 s, and never past
 * 27 s from SIGTERM, so that the lease is released within the pod's 30 s grace period.
 */
const eventsFlushTimeoutMs = 3_000;
const eventsFlushDeadlineMs = 27_000;

export class Manager<Settings = undefined> {
  readonly metrics = new Metrics();
  readonly cache: Cache;
  private readonly rest: RestClient;
  private readonly client: Client;
  private readonly controllers: Controller[] = [];
  private readonly recorders: EventRecorder[] = [];
  private readonly identity: string;
  private readonly leaseName: string;
  private servers: (Server | undefined)[] = [];

  constructor(config: KubeConfig, private readonly log: Logger, operators: readonly Operator<Settings>[],
    private readonly options: ManagerOptions<Settings> = {}) {
    this.identity = options.identity ?? `${hostname()}_${randomBytes(4).toString('hex')}`;
    this.leaseName = options.leaseName ?? 'keelson-controller-leader';
    this.rest = new RestClient(config, `${options.userAgent ?? 'keelson'}/${this.identity}`);
    const skipped = options.namespace ? operators.filter((o) => o.everyNamespace) : [];
    if (skipped.length) {
      log.warn({ operators: skipped.map((o) => o.name), namespace: options.namespace }, 'not running operators of ' +
        'cluster-scoped kinds: they run only when every namespace is watched');
    }
    operators = operators.filter((o) => !skipped.includes(o));
    const declared = [...operators.flatMap((o) => this.permissionsOf(o)), ...eventPermissions, ...leaderElectionPermissions,
      ...(options.metricsSecure ? metricsAuthPermissions : [])];
    this.client = new Client(this.rest, declared, options.fieldManager ?? 'keelson', (verb, type, code) =>
      this.metrics.clientRequests.inc({ verb, resource: type.resource, code: String(code) }));
    this.cache = new Cache(this.client, this.metrics, log, { ...defaultInformerOptions, ...options.informers });
    for (const operator of operators) this.setUp(operator);
  }

  private permissionsOf(operator: Operator<Settings>): readonly Permission[] {
    return [...operator.permissions, ...operator.configuredPermissions?.(this.options.settings as Settings) ?? []];
  }

  private setUp(operator: Operator<Settings>): void {
    const client = this.client.scoped([...this.permissionsOf(operator), ...eventPermissions],
      `${this.client.fieldManager}-${operator.name}`);
    const log = this.log.child({ operator: operator.name });
    const events = new EventRecorder(client, operator.name, this.identity, log);
    this.recorders.push(events);
    operator.setup({
      client,
      cache: this.cache,
      events,
      metrics: this.metrics,
      log,
      namespace: this.options.namespace,
      settings: this.options.settings as Settings,
      addController: (spec) => {
        const controller = new Controller(spec, this.cache, client, this.options.namespace, this.metrics, log);
        controller.watch();
        this.controllers.push(controller);
        return controller;
      },
    });
  }

  /** Where the servers listen (useful when a port of 0 was asked for). */
  get ports(): { metrics?: number; health?: number } {
    return { metrics: boundPort(this.servers[0]), health: boundPort(this.servers[1]) };
  }

  /** Runs until `signal` aborts (exit code 0) or leadership is lost (1). */
  async run(signal: AbortSignal): Promise<number> {
    let stopping = false;
    const started = await Promise.allSettled([
      this.secureServing().then((secure) => serveMetrics(this.options.metricsBindAddress ?? ':8080', this.metrics.registry, secure)),
      serveHealth(this.options.healthProbeBindAddress ?? ':8081', {
        healthz: () => undefined,
        readyz: () => {
          if (stopping) return 'shutting down';
          const waiting = this.cache.notSynced();
          return waiting.length ? `caches not synced:\n${waiting.join('\n')}` : undefined;
        },
      }),
    ]);
    this.servers = started.map((s) => (s.status === 'fulfilled' ? s.value : undefined));
    const refused = started.find((s) => s.status === 'rejected');
    if (refused) {
      // A server that did listen would keep the process alive with nothing else running.
      await this.closeServers();
      this.rest.close();
      throw refused.reason;
    }
    this.log.info({ ...this.ports, controllers: this.controllers.map((c) => c.spec.name),
      namespace: this.options.namespace ?? 'all' }, 'starting');

    const elector = this.options.leaderElect ? this.elector() : undefined;
    // Renewal outlives SIGTERM until the drain ends: a drain longer than the lease must not let a follower lead
    // while this process still writes.
    const renewal = new AbortController();
    let leadership: Promise<'lost' | 'stopped'> | undefined;
    this.cache.start();
    let exitCode = 0;
    try {
      await Promise.all([this.cache.waitForSync(), elector?.acquire(signal)].map((p) => abortable(p, signal)));
      this.log.info('caches synced; starting controllers');
      for (const controller of this.controllers) controller.start();
      leadership = elector?.keepRenewing(renewal.signal);
      const outcome = await Promise.race([aborted(signal), ...(leadership ? [leadership] : [])]);
      if (outcome === 'lost') exitCode = 1;
    } catch (error) {
      if (!signal.aborted) throw error;
    } finally {
      stopping = true;
      const stoppingAt = performance.now();
      this.log.info('shutting down: finishing reconciles in flight');
      const drained = await Promise.race([
        Promise.all(this.controllers.map((c) => c.stop())).then(() => true),
        new Promise<boolean>((resolve) => setTimeout(resolve, shutdownTimeoutMs, false).unref()),
      ]);
      if (!drained) {
        this.log.error({ timeoutMs: shutdownTimeoutMs }, 'reconciles still running at the shutdown deadline');
        exitCode = 1;
      }
      const flushMs = Math.max(0, Math.min(eventsFlushTimeoutMs, eventsFlushDeadlineMs - (performance.now() - stoppingAt)));
      await Promise.all(this.recorders.map((events) => events.flush(flushMs)));
      renewal.abort();
      // Whatever ended leadership was thrown above already; the servers and watches below must still close.
      await leadership?.catch(() => undefined);
      await elector?.release();
      await this.cache.stop();
      await this.closeServers();
      this.rest.close();
      this.log.info({ exitCode }, 'stopped');
    }
    return exitCode;
  }

  /** TLS and the scraper check for /metrics, when metricsSecure asks for them. */
  private async secureServing(): Promise<SecureServing | undefined> {
    if (!this.options.metricsSecure) return undefined;
    const dir = this.options.metricsCertDir;
    const { cert, key } = dir
      ? { cert: await readFile(join(dir, 'tls.crt'), 'utf8'), key: await readFile(join(dir, 'tls.key'), 'utf8') }
      : selfSignedCertificate(this.identity, [hostname(), 'localhost', '127.0.0.1', '::1']);
    const authorizer = new MetricsAuthorizer(this.client.scoped(metricsAuthPermissions), this.log);
    return { cert, key, authorize: (authorization) => authorizer.check(authorization) };
  }

  private async closeServers(): Promise<void> {
    await Promise.all(this.servers.map((s) => s && new Promise((resolve) => s.close(resolve))));
  }

  private elector(): LeaderElector {
    const namespace = this.options.leaderElectionNamespace;
    if (!namespace) throw new Error('leader election needs a namespace for its Lease (--leader-election-namespace or POD_NAMESPACE)');
    const name = this.leaseName;
    this.metrics.leaderStatus.set({ name }, 0);
    return new LeaderElector(this.client.scoped(leaderElectionPermissions), {
      namespace, name, identity: this.identity,
      leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000,
    }, this.log, (leading) => this.metrics.leaderStatus.set({ name }, leading ? 1 : 0));
  }
}

function aborted(signal: AbortSignal): Promise<'stopped'> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve('stopped');
    else signal.addEventListener('abort', () => resolve('stopped'), { once: true });
  });
}

/** Rejects as soon as `signal` aborts, so start-up waits end on shutdown. */
function abortable<T>(promise: Promise<T> | undefined, signal: AbortSignal): Promise<T | undefined> {
  if (!promise) return Promise.resolve(undefined);
  return Promise.race([promise, aborted(signal).then(() => { throw new Error('stopped'); })]);
}
