// PodBuggerTool: every running, ready pod in its namespace that matches gets one debug ephemeral container from it,
// appended through pods/ephemeralcontainers (ephemeral containers can be neither changed nor removed). Pods not
// ready yet are left until their next change; a pod recreated under the same name is a new pod and gets one too.
import type { ControllerOptions } from '../../api/flags.ts';
import type { ReconcileContext, ReconcileResult, Request } from '../../runtime/controller.ts';
import { podReady, type EphemeralContainer, type Pod } from '../../runtime/core.ts';
import type { Operator, OperatorContext } from '../../runtime/manager.ts';
import type { Owner } from '../../runtime/objects.ts';
import { ApiError } from '../../runtime/rest.ts';
import { readPrimary } from '../../runtime/primary.ts';
import { kindType, types, type KubeObject } from '../../runtime/resources.ts';
import { timestamp, writeStatusWithConditions, type Condition } from '../../runtime/status.ts';
import { primariesSelecting } from '../../runtime/mappers.ts';
import { matches, selectorString } from '../../runtime/selectors.ts';
import { containerName, debugContainer, markerVariable, parseDebugPolicy, policyRefusal, refusalOf, selectorOf,
  type DebugPolicy } from './debug.ts';
import { permissions } from './permissions.ts';
import { PodBuggerTool, type PodBuggerToolResource, type PodBuggerToolStatus } from './schema.ts';

const toolType = kindType(PodBuggerTool);
/**
 * Every pod, since a tool may select any; of each, what readiness and the debug containers are judged on. The update
 * through pods/ephemeralcontainers takes only the ephemeral containers from what it is sent, so the rest may be left out.
 */
const podView = { keep: ['spec.containers.name', 'spec.ephemeralContainers', 'status.phase', 'status.conditions'] };
const recentLimit = 20;

function runningAndReady(pod: Pod): boolean {
  return pod.status?.phase === 'Running' && podReady(pod);
}

/** Whether the pod already carries this tool's container, under any spec the tool has had. */
function carries(pod: Pod, tool: string, name: string): boolean {
  return (pod.spec?.ephemeralContainers ?? []).some((c) => c.name === name ||
    (c.env ?? []).some((e) => e.name === markerVariable && e.value === tool));
}

class PodBuggerToolReconciler {
  private readonly tools;
  private readonly pods;

  constructor(private readonly ctx: OperatorContext, private readonly policy: DebugPolicy) {
    this.tools = ctx.cache.informer<PodBuggerToolResource>(toolType, ctx.namespace, ctx.client);
    this.pods = ctx.cache.informer<Pod>(types.pods, ctx.namespace, ctx.client, podView);
  }

  /** The tools in the pod's own namespace whose selector matches it. */
  toolsFor(pod: KubeObject): Request[] {
    return primariesSelecting(this.tools, pod, (t) => selectorOf(t.spec));
  }

  async reconcile(request: Request, { log }: ReconcileContext): Promise<ReconcileResult> {
    const primary = readPrimary(this.tools, request, PodBuggerTool);
    if (!primary) return;
    const { object: tool, spec, problems } = primary;
    const generation = tool.metadata.generation;
    if (problems.length) {
      await this.report(tool, { observedGeneration: generation }, { type: 'Ready', status: 'False', reason: 'InvalidSpec',
        observedGeneration: generation, message: problems.join('; ') });
      return;
    }
    const notAllowed = policyRefusal(this.policy, spec);
    if (notAllowed) {
      // Nothing is added to any pod; what was added before stays, since ephemeral containers cannot be removed.
      this.ctx.events.record(tool, 'Warning', notAllowed.reason, notAllowed.message);
      await this.report(tool, { observedGeneration: generation }, { type: 'Ready', status: 'False', ...notAllowed,
        observedGeneration: generation });
      return;
    }

    const selector = selectorOf(spec);
    const name = containerName(tool.metadata.name, spec.image);
    const matched = this.pods.listNamespace(request.namespace)
      .filter((p) => !p.metadata.deletionTimestamp && matches(selector, p.metadata.labels));
    const injected: { pod: string; container: string; time: string }[] = [];
    const refused: string[] = [];
    let waiting = 0;
    for (const pod of matched) {
      if (carries(pod, tool.metadata.name, name)) continue;
      if (!runningAndReady(pod)) {
        waiting++;
        continue;
      }
      const containers = pod.spec?.containers ?? [];
      const target = spec.targetContainerName ?? containers[0]?.name;
      const refusal = target && containers.some((c) => c.name === target)
        ? await this.inject(pod, debugContainer(tool.metadata.name, spec, target))
        : `it has no container named ${target}`;
      const podRef = { ...pod, apiVersion: 'v1', kind: 'Pod' } as Pod & Owner;
      if (refusal) {
        refused.push(`pod ${pod.metadata.name}: ${refusal}`);
        this.ctx.events.record(tool, 'Warning', 'Refused', `Could not add debug container ${name} to pod ` +
          `${pod.metadata.name}: ${refusal}`);
        this.ctx.events.record(podRef, 'Warning', 'DebugContainerRefused', `PodBuggerTool ${tool.metadata.name}: ${refusal}`);
        continue;
      }
      injected.push({ pod: pod.metadata.name, container: name, time: timestamp() });
      log.info({ pod: pod.metadata.name, container: name }, 'added debug container');
      this.ctx.events.record(podRef, 'Normal', 'DebugContainerAdded',
        `Added debug container ${name} (${spec.image}) for PodBuggerTool ${tool.metadata.name}`);
      this.ctx.events.record(tool, 'Normal', 'Injected', `Added debug container ${name} to pod ${pod.metadata.name}`);
    }

    const carrying = matched.filter((p) => carries(p, tool.metadata.name, name)).length + injected.length;
    const status: Partial<PodBuggerToolStatus> = {
      observedGeneration: generation,
      selector: selectorString(selector),
      matchedPods: matched.length,
      injectedPods: carrying,
      recentInjections: [...injected.reverse(), ...(tool.status?.recentInjections ?? [])].slice(0, recentLimit),
    };
    const ready: Omit<Condition, 'lastTransitionTime'> = refused.length
      ? { type: 'Ready', status: 'False', reason: 'Refused', observedGeneration: generation,
        message: `the apiserver refused the debug container: ${refused.join('; ')}` }
      : { type: 'Ready', status: 'True', reason: 'Injected', observedGeneration: generation,
        message: `${carrying} of ${matched.length} matching pods have the debug container` +
          (waiting ? `; ${waiting} not running and ready yet` : '') };
    await this.report(tool, status, ready);
  }

  /** Appends the container; resolves with the apiserver's reason if it refused, or undefined. Transient errors retry. */
  private async inject(pod: Pod, container: EphemeralContainer): Promise<string | undefined> {
    try {
      await this.ctx.client.update(types.pods, { ...pod, spec: { ...pod.spec,
        ephemeralContainers: [...(pod.spec?.ephemeralContainers ?? []), container] } }, 'ephemeralcontainers');
      return undefined;
    } catch (error) {
      const refusal = error instanceof ApiError ? refusalOf(error) : undefined;
      if (refusal) return refusal;
      throw error;
    }
  }

  private async report(tool: PodBuggerToolResource, status: Partial<PodBuggerToolStatus>,
    ready: Omit<Condition, 'lastTransitionTime'>): Promise<void> {
    await writeStatusWithConditions(this.ctx.client, toolType, tool, status, [ready]);
  }
}

export const podBuggerToolOperator: Operator<ControllerOptions> = {
  name: 'podbuggertool',
  permissions,
  setup(ctx) {
    const reconciler = new PodBuggerToolReconciler(ctx, parseDebugPolicy(ctx.settings.podBuggerToolAllowedProfiles,
      ctx.settings.podBuggerToolAllowedImages));
    ctx.addController({
      name: 'podbuggertool',
      for: toolType,
      watches: [{ type: types.pods, view: podView, map: (pod) => reconciler.toolsFor(pod) }],
      workers: 2,
      reconcile: (request, context) => reconciler.reconcile(request, context),
    });
  },
};
