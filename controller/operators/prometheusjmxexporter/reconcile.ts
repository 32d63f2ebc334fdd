// PrometheusJmxExporter: for each running pod that matches, find the one JVM in the container, copy the agent and its
// config in, load the agent through the attach API, and annotate the pod for scraping, recording the container ID
// so that a restarted container (a new ID) gets the agent again and an unchanged one never twice. Config changes are
// rewritten into containers (the exporter rereads its file); port changes wait for a restart. The finalizer takes
// the annotations off when the resource goes; agents stay in their JVMs until those restart. With spec.podMonitor, a
// PodMonitor it owns tells the Prometheus Operator the same.
import type { ReconcileContext, ReconcileResult, Request } from '../../runtime/controller.ts';
import type { Operator, OperatorContext } from '../../runtime/manager.ts';
import type { Pod } from '../../runtime/core.ts';
import type { Owner } from '../../runtime/objects.ts';
import { withFinalizer } from '../../runtime/finalizer.ts';
import { readPrimary } from '../../runtime/primary.ts';
import { ExecOutputExceeded } from '../../runtime/exec.ts';
import { kindType, keyOf, types, type KubeObject } from '../../runtime/resources.ts';
import { primariesConcerning } from '../../runtime/mappers.ts';
import { matches, selectorString } from '../../runtime/selectors.ts';
import { writeStatusWithConditions, type Condition } from '../../runtime/status.ts';
import { readAgent } from './agent.ts';
import { agentOptions, inspectScript, loadAgentScript, parseInspection, writeFileScript } from './container.ts';
import { permissions } from './permissions.ts';
import { podMonitorFor } from './pod-monitor.ts';
import { syncPodMonitor } from '../pod-monitor.ts';
import { configDigest, markAnnotations, planPod, podFields, recordAnnotations, recordOf, unmarkAnnotations,
  type InjectionRecord, type Wanted } from './plan.ts';
import { PrometheusJmxExporter, type PrometheusJmxExporterResource, type PrometheusJmxExporterStatus } from './schema.ts';

interface ConfigMap extends KubeObject {
  data?: Record<string, string>;
}

type Exporter = PrometheusJmxExporterResource & Owner;
type Spec = PrometheusJmxExporterResource['spec'];
type Endpoint = NonNullable<PrometheusJmxExporterStatus['metricsEndpoints']>[number];
type Skipped = NonNullable<PrometheusJmxExporterStatus['skippedPods']>[number];
type ConditionUpdate = Omit<Condition, 'lastTransitionTime'>;

const exporterType = kindType(PrometheusJmxExporter);
const finalizer = 'keelson.dev/jmx-exporter-annotations';
/** Every pod, since an exporter may select any; of each, what the plan reads. */
const podView = { keep: podFields };

/** A pod the operator could not give the exporter, for a reason that retrying now would not change. */
class PodRefusal extends Error {}

const podRef = (pod: Pod) => ({ ...pod, apiVersion: 'v1', kind: 'Pod' }) as Pod & Owner;

class PrometheusJmxExporterReconciler {
  private readonly exporters;
  private readonly pods;
  private agent: Promise<Buffer> | undefined;

  constructor(private readonly ctx: OperatorContext) {
    this.exporters = ctx.cache.informer<PrometheusJmxExporterResource>(exporterType, ctx.namespace, ctx.client);
    this.pods = ctx.cache.informer<Pod>(types.pods, ctx.namespace, ctx.client, podView);
  }

  /** Exporters whose selector matches the pod, and the one that marked it. */
  exportersForPod(pod: KubeObject): Request[] {
    const marker = recordOf(pod)?.exporter;
    return primariesConcerning(this.exporters, pod, (e) => e.metadata.name === marker ||
      matches({ matchLabels: e.spec.labelSelector }, pod.metadata.labels));
  }

  exportersForConfigMap(configMap: KubeObject): Request[] {
    return primariesConcerning(this.exporters, configMap,
      (e) => e.spec.config?.configMapName === configMap.metadata.name);
  }

  async reconcile(request: Request, context: ReconcileContext): Promise<ReconcileResult> {
    const cached = this.exporters.get(keyOf(request));
    if (!cached) return;
    return withFinalizer(this.ctx.client, exporterType, cached, finalizer, {
      apply: () => this.apply(request, context),
      cleanup: () => this.unmark(cached.metadata.namespace!, cached.metadata.name, () => true),
    });
  }

  private async apply(request: Request, { log }: ReconcileContext): Promise<ReconcileResult> {
    const primary = readPrimary(this.exporters, request, PrometheusJmxExporter);
    if (!primary) return;
    const { object: exporter, spec, problems } = primary;
    const generation = exporter.metadata.generation;
    const notReady = (reason: string, message: string) => this.report(exporter, { observedGeneration: generation },
      { type: 'Ready', status: 'False', reason, message, observedGeneration: generation });
    if (problems.length) return notReady('InvalidSpec', problems.join('; '));

    const config = await this.readConfig(exporter.metadata.namespace!, spec);
    if (typeof config !== 'string') {
      this.ctx.events.record(exporter, 'Warning', config.reason, config.message);
      return notReady(config.reason, config.message);
    }
    let agent: Buffer;
    try {
      agent = await (this.agent ??= readAgent());
    } catch (error) {
      this.agent = undefined;
      return notReady('AgentUnavailable', `the controller cannot read the exporter agent: ${(error as Error).message}`);
    }

    const wanted: Wanted = { exporter: exporter.metadata.name, containerName: spec.containerName, port: spec.port, config };
    const selector = { matchLabels: spec.labelSelector };
    const pods = this.pods.listNamespace(exporter.metadata.namespace).filter((p) => !p.metadata.deletionTimestamp);
    const matched = pods.filter((p) => matches(selector, p.metadata.labels));
    const endpoints: Endpoint[] = [];
    const skipped: Skipped[] = [];
    const restartNeeded: string[] = [];
    for (const pod of matched) {
      const plan = planPod(pod, wanted);
      try {
        let record: InjectionRecord;
        switch (plan.action) {
          case 'skip':
            skipped.push({ pod: pod.metadata.name, reason: plan.reason });
            continue;
          case 'inject':
            record = await this.inject(exporter, spec, pod, plan.container, plan.containerID, config, agent);
            log.info({ pod: pod.metadata.name, container: record.container, port: record.port }, 'exporter loaded');
            break;
          case 'rewrite-config':
            record = await this.rewriteConfig(exporter, pod, plan.record, config);
            break;
          case 'restart-needed':
          case 'serving':
            record = plan.record;
        }
        if (record.port !== spec.port) restartNeeded.push(pod.metadata.name);
        endpoints.push({ pod: pod.metadata.name, container: record.container, port: record.port });
      } catch (error) {
        if (!(error instanceof PodRefusal)) throw error;
        skipped.push({ pod: pod.metadata.name, reason: error.message });
        this.ctx.events.record(exporter, 'Warning', 'InjectionFailed', `pod ${pod.metadata.name}: ${error.message}`);
        this.ctx.events.record(podRef(pod), 'Warning', 'JmxExporterFailed',
          `PrometheusJmxExporter ${exporter.metadata.name}: ${error.message}`);
      }
    }
    await this.unmark(exporter.metadata.namespace!, exporter.metadata.name, (p) => !matches(selector, p.metadata.labels));

    const ready: Omit<Condition, 'lastTransitionTime'> = restartNeeded.length
      ? { type: 'Ready', status: 'False', reason: 'RestartNeeded', observedGeneration: generation,
        message: `the agent cannot move to port ${spec.port} in a running JVM: restart the containers of ` +
          `${restartNeeded.join(', ')}` }
      : skipped.length
        ? { type: 'Ready', status: 'False', reason: 'PodsSkipped', observedGeneration: generation,
          message: skipped.map((s) => `${s.pod}: ${s.reason}`).join('; ') }
        : { type: 'Ready', status: 'True', reason: 'Exporting', observedGeneration: generation,
          message: `${endpoints.length} of ${matched.length} matching pods serve metrics` };
    const monitor = await syncPodMonitor(this.ctx, exporter, spec.podMonitor && podMonitorFor(exporter, spec),
      exporter.status?.podMonitor);
    await this.report(exporter, {
      observedGeneration: generation,
      selector: selectorString(selector),
      endpointCount: endpoints.length,
      metricsEndpoints: endpoints.slice(0, 500),
      skippedPods: skipped.slice(0, 100),
      podMonitor: monitor.name,
    }, ready, monitor.condition);
    // Installing the Prometheus Operator's CRDs tells this controller nothing: look again now and then.
    if (monitor.retry) return { requeueAfterMs: 30_000 };
  }

  /** Read when needed, not cached: a cache of every ConfigMap's data to use one of them would cost far more. */
  private async readConfig(namespace: string, spec: Spec): Promise<string | { reason: string; message: string }> {
    const { configMapName, configMapKey } = spec.config;
    const configMap = await this.ctx.client.get<ConfigMap>(types.configMaps, namespace, configMapName);
    if (!configMap) return { reason: 'ConfigMapNotFound', message: `ConfigMap ${configMapName} does not exist` };
    const config = configMap.data?.[configMapKey];
    if (config === undefined) {
      return { reason: 'ConfigKeyNotFound', message: `ConfigMap ${configMapName} has no key ${configMapKey}` };
    }
    return config;
  }

  private async run(pod: Pod, container: string, script: string, args: string[], stdin?: Buffer): Promise<string> {
    const result = await this.ctx.client.exec(types.pods, { namespace: pod.metadata.namespace!, pod: pod.metadata.name,
      container, command: ['sh', '-c', script, 'keelson', ...args], stdin }).catch((error: unknown) => {
      // The same container would write as much again: a refusal of this pod, not an error to retry.
      throw error instanceof ExecOutputExceeded ? new PodRefusal(error.message) : error;
    });
    if (result.exitCode !== 0) {
      throw new PodRefusal((result.stderr.trim() || `exit code ${result.exitCode}`).slice(0, 500));
    }
    return result.stdout.trim();
  }

  /** Puts `bytes` into the container's exporter directory as `file`; resolves with its path there. */
  private copy(pod: Pod, container: string, file: string, bytes: Buffer): Promise<string> {
    return this.run(pod, container, writeFileScript, [file, String(bytes.length)], bytes);
  }

  /**
   * Claims the container instance (a write on the pod's resourceVersion: of two exporters or two controllers, one
   * wins, the other fails with a conflict and then sees the claim), loads the agent, and marks the pod. A refusal is
   * recorded on the pod, so the same container is not tried (nor reported) again.
   */
  private async inject(exporter: Exporter, spec: Spec, pod: Pod, container: string, containerID: string,
    config: string, agent: Buffer): Promise<InjectionRecord> {
    const claim = { exporter: exporter.metadata.name, container, containerID, port: spec.port, config: configDigest(config) };
    await this.ctx.client.patch(types.pods, pod.metadata.namespace, pod.metadata.name, { metadata: {
      resourceVersion: pod.metadata.resourceVersion, annotations: recordAnnotations({ ...claim, attaching: true }) } }, 'merge');
    try {
      return await this.load(exporter, spec, pod, claim, config, agent);
    } catch (error) {
      if (error instanceof PodRefusal) {
        await this.ctx.client.patch(types.pods, pod.metadata.namespace, pod.metadata.name,
          { metadata: { annotations: recordAnnotations({ ...claim, refused: error.message }) } }, 'merge');
      }
      throw error;
    }
  }

  private async load(exporter: Exporter, spec: Spec, pod: Pod, claim: InjectionRecord, config: string, agent: Buffer):
  Promise<InjectionRecord> {
    const { container } = claim;
    const { jvms, portInUse } = parseInspection(await this.run(pod, container, inspectScript, [String(spec.port)]));
    if (jvms.length === 0) throw new PodRefusal(`no JVM runs in container ${container} (as the container's user)`);
    if (jvms.length > 1) {
      throw new PodRefusal(`${jvms.length} JVMs run in container ${container} (pids ${jvms.map((j) => j.pid).join(', ')}): ` +
        'it is not clear which to export, so none gets the agent');
    }
    const jvm = jvms[0]!;
    const record = { ...claim, port: jvm.loadedPort ?? spec.port };
    if (jvm.loadedPort === undefined) {
      if (portInUse) {
        throw new PodRefusal(`port ${spec.port} is already in use in the pod; the exporter would stop the JVM on a ` +
          'taken port, so it was not loaded');
      }
      const jar = await this.copy(pod, container, 'jmx_prometheus_javaagent.jar', agent);
      const configPath = await this.copy(pod, container, 'config.yaml', Buffer.from(config));
      await this.run(pod, container, loadAgentScript, [String(jvm.pid), jvm.startTime, jar,
        agentOptions(spec.port, configPath, spec.bindAddress), String(spec.port)]);
    }
    await this.mark(pod, record);
    this.ctx.events.record(podRef(pod), 'Normal', 'JmxExporterLoaded', `PrometheusJmxExporter ` +
      `${exporter.metadata.name} loaded the JMX exporter into the JVM of container ${container}, port ${record.port}`);
    this.ctx.events.record(exporter, 'Normal', 'Injected',
      `Loaded the JMX exporter into pod ${pod.metadata.name} (container ${container}, port ${record.port})`);
    return record;
  }

  private async rewriteConfig(exporter: Exporter, pod: Pod, record: InjectionRecord, config: string):
  Promise<InjectionRecord> {
    await this.copy(pod, record.container, 'config.yaml', Buffer.from(config));
    const updated = { ...record, config: configDigest(config) };
    await this.mark(pod, updated);
    this.ctx.events.record(exporter, 'Normal', 'ConfigUpdated',
      `Rewrote the exporter config in pod ${pod.metadata.name}; the exporter rereads it on its next scrape`);
    return updated;
  }

  private async mark(pod: Pod, record: InjectionRecord): Promise<void> {
    await this.ctx.client.patch(types.pods, pod.metadata.namespace, pod.metadata.name,
      { metadata: { annotations: markAnnotations(record) } }, 'merge');
  }

  /** Takes this exporter's annotations off the pods it marked that `which` picks; a pod already gone needs nothing. */
  private async unmark(namespace: string, exporter: string, which: (pod: Pod) => boolean): Promise<void> {
    for (const pod of this.pods.listNamespace(namespace)) {
      if (recordOf(pod)?.exporter !== exporter || !which(pod)) continue;
      await this.ctx.client.patchIfPresent(types.pods, namespace, pod.metadata.name,
        { metadata: { annotations: unmarkAnnotations } }, 'merge');
    }
  }

  private async report(exporter: Exporter, status: Partial<PrometheusJmxExporterStatus>, ready: ConditionUpdate,
    podMonitor?: ConditionUpdate): Promise<void> {
    await writeStatusWithConditions(this.ctx.client, exporterType, exporter, status,
      podMonitor ? [ready, podMonitor] : [ready], exporter.spec.podMonitor ? [] : ['PodMonitor']);
  }

}

export const prometheusJmxExporterOperator: Operator = {
  name: 'prometheusjmxexporter',
  permissions,
  setup(ctx) {
    const reconciler = new PrometheusJmxExporterReconciler(ctx);
    ctx.addController({
      name: 'prometheusjmxexporter',
      for: exporterType,
      watches: [
        { type: types.pods, view: podView, map: (pod) => reconciler.exportersForPod(pod) },
        // Only which ConfigMap changed is needed to know whom to reconcile: the cache holds their metadata alone.
        { type: types.configMaps, view: { keep: [] }, map: (configMap) => reconciler.exportersForConfigMap(configMap) },
      ],
      workers: 2,
      reconcile: (request, context) => reconciler.reconcile(request, context),
    });
  },
};
