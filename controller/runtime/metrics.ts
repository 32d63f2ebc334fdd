// Prometheus metrics under controller-runtime's names and labels, so the dashboards users already have work.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

const workqueueBuckets = [1e-8, 1e-7, 1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1000];
const reconcileBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8,
  0.9, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 4.5, 5, 6, 7, 8, 9, 10, 15, 20, 25, 30, 40, 50, 60];

interface WorkInProgress {
  unfinishedWorkSeconds(): number;
  longestRunningSeconds(): number;
}

export class Metrics {
  readonly registry = new Registry();
  /** Per informer, how long its watch has been silent and how many objects it holds; read when /metrics is scraped. */
  readonly informerSources = new Map<string, { silenceSeconds: () => number; objects: () => number }>();
  /** Per controller, its queue's work in progress; read when /metrics is scraped. */
  readonly workInProgressSources = new Map<string, WorkInProgress>();

  readonly reconcileTotal = new Counter({ name: 'controller_runtime_reconcile_total', registers: [this.registry],
    help: 'Total number of reconciliations per controller', labelNames: ['controller', 'result'] });
  readonly reconcileErrors = new Counter({ name: 'controller_runtime_reconcile_errors_total',
    registers: [this.registry], help: 'Total number of reconciliation errors per controller', labelNames: ['controller'] });
  readonly reconcileTime = new Histogram({ name: 'controller_runtime_reconcile_time_seconds', registers: [this.registry],
    help: 'Length of time per reconciliation per controller', labelNames: ['controller'], buckets: reconcileBuckets });
  readonly activeWorkers = new Gauge({ name: 'controller_runtime_active_workers', registers: [this.registry],
    help: 'Number of currently used workers per controller', labelNames: ['controller'] });
  readonly maxWorkers = new Gauge({ name: 'controller_runtime_max_concurrent_reconciles', registers: [this.registry],
    help: 'Maximum number of concurrent reconciles per controller', labelNames: ['controller'] });

  readonly queueDepth = new Gauge({ name: 'workqueue_depth', registers: [this.registry],
    help: 'Current depth of workqueue', labelNames: ['name', 'controller'] });
  readonly queueAdds = new Counter({ name: 'workqueue_adds_total', registers: [this.registry],
    help: 'Total number of adds handled by workqueue', labelNames: ['name', 'controller'] });
  readonly queueRetries = new Counter({ name: 'workqueue_retries_total', registers: [this.registry],
    help: 'Total number of retries handled by workqueue', labelNames: ['name', 'controller'] });
  readonly queueDuration = new Histogram({ name: 'workqueue_queue_duration_seconds', registers: [this.registry],
    help: 'How long in seconds an item stays in workqueue before being requested', labelNames: ['name', 'controller'],
    buckets: workqueueBuckets });
  readonly workDuration = new Histogram({ name: 'workqueue_work_duration_seconds', registers: [this.registry],
    help: 'How long in seconds processing an item from workqueue takes', labelNames: ['name', 'controller'],
    buckets: workqueueBuckets });
  readonly unfinishedWork = this.workInProgressGauge('workqueue_unfinished_work_seconds',
    'How many seconds of work has been done that is in progress and hasn\'t been observed by work_duration. ' +
      'Large values indicate stuck threads.', (queue) => queue.unfinishedWorkSeconds());
  readonly longestRunning = this.workInProgressGauge('workqueue_longest_running_processor_seconds',
    'How many seconds has the longest running processor for workqueue been running.',
    (queue) => queue.longestRunningSeconds());

  readonly leaderStatus = new Gauge({ name: 'leader_election_master_status', registers: [this.registry],
    help: 'Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master',
    labelNames: ['name'] });

  readonly watchRestarts = new Counter({ name: 'keelson_watch_restarts_total', registers: [this.registry],
    help: 'Watches restarted after an error, a silence or a 410 Gone, per informer', labelNames: ['resource', 'reason'] });
  readonly watchSilence = new Gauge({ name: 'keelson_watch_seconds_since_last_event', registers: [this.registry],
    help: 'Seconds since the informer last heard from its watch (events and bookmarks)', labelNames: ['resource'],
    collect: () => {
      for (const [resource, { silenceSeconds }] of this.informerSources) this.watchSilence.set({ resource }, silenceSeconds());
    } });
  readonly cacheObjects = new Gauge({ name: 'keelson_cache_objects', registers: [this.registry],
    help: 'Objects an informer holds in the cache, per informer (its resource, namespace and label selector)',
    labelNames: ['resource'], collect: () => {
      for (const [resource, { objects }] of this.informerSources) this.cacheObjects.set({ resource }, objects());
    } });
  readonly clientRequests = new Counter({ name: 'keelson_client_requests_total', registers: [this.registry],
    help: 'API requests made by the controller, by verb, resource and HTTP status', labelNames: ['verb', 'resource', 'code'] });

  constructor() {
    // The event-loop delay is sampled once a second: prom-client's 10 ms default wakes a process at rest a hundred
    // times a second, which was nearly all of its idle CPU (bench/results/before-after/quiet-rest.md).
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 1_000 });
  }

  /** A per-queue gauge read from each controller's queue when /metrics is scraped. */
  private workInProgressGauge(name: string, help: string, read: (queue: WorkInProgress) => number): Gauge {
    const gauge: Gauge = new Gauge({ name, help, registers: [this.registry], labelNames: ['name', 'controller'],
      collect: () => {
        for (const [controller, queue] of this.workInProgressSources) gauge.set({ name: controller, controller }, read(queue));
      } });
    return gauge;
  }
}
