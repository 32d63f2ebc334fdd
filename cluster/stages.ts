// kwok stages of our own: a node heartbeat, and states that labelled pods go to as a kubelet would report them.
import type { LocalCluster } from './cluster.ts';

/**
 * Refreshes Ready nodes' conditions every minute or two, and nothing else (liveness comes from the node Leases kwok
 * renews). kwok's own heartbeat stage rewrites the node's addresses from a template, and pod logs and exec failed
 * ("no preferred addresses found") around it.
 */
export const nodeHeartbeatStage = {
  apiVersion: 'kwok.x-k8s.io/v1alpha1',
  kind: 'Stage',
  metadata: { name: 'keelson-node-heartbeat' },
  spec: {
    resourceRef: { apiGroup: 'v1', kind: 'Node' },
    selector: { matchExpressions: [
      { key: '.status.phase', operator: 'In', values: ['Running'] },
      { key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: 'In', values: ['True'] },
    ] },
    delay: { durationMilliseconds: 60_000, jitterDurationMilliseconds: 120_000 },
    next: { statusTemplate: `{{ $now := Now }}
{{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
conditions:
{{ range NodeConditions }}
- lastHeartbeatTime: {{ $now | Quote }}
  lastTransitionTime: {{ $lastTransitionTime | Quote }}
  message: {{ .message | Quote }}
  reason: {{ .reason | Quote }}
  status: {{ .status | Quote }}
  type: {{ .type | Quote }}
{{ end }}` },
  },
};

// A pod labelled keelson.dev/simulate=<state> goes to that state and stays there (a positive weight beats kwok's
// own stages).

export const simulateLabel = 'keelson.dev/simulate';
export type SimulatedState = 'crash-loop' | 'image-pull-backoff' | 'recovered';

// No pod IP: kwok allocates a new one on every application, which would make the stage loop.
const hostIP = `{{ with NodeIPWith .spec.nodeName }}
hostIP: {{ . | Quote }}
{{ end }}`;

function conditions(ready: boolean): string {
  return ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => {
    const status = type === 'PodScheduled' || type === 'Initialized' || ready ? 'True' : 'False';
    return `- type: ${type}\n  status: "${status}"\n  lastTransitionTime: {{ $now | Quote }}` +
      (status === 'False' ? '\n  reason: ContainersNotReady' : '');
  }).join('\n');
}

function containers(state: string, extra = ''): string {
  return `{{ range .spec.containers }}
- name: {{ .name | Quote }}
  image: {{ .image | Quote }}
${state.split('\n').map((l) => `  ${l}`).join('\n')}
${extra}{{ end }}`;
}

const statusTemplates: Record<SimulatedState, { from: string[]; template: string }> = {
  'crash-loop': {
    from: ['Pending'],
    template: `phase: Running\nstartTime: {{ $now | Quote }}\nconditions:\n${conditions(false)}\ncontainerStatuses:\n${containers(
      `ready: false
restartCount: 4
state:
  waiting:
    reason: CrashLoopBackOff
    message: back-off 1m20s restarting failed container
lastState:
  terminated:
    exitCode: 1
    reason: Error
    startedAt: {{ $now | Quote }}
    finishedAt: {{ $now | Quote }}`)}\n${hostIP}`,
  },
  'image-pull-backoff': {
    from: ['Pending'],
    template: `phase: Pending\nconditions:\n${conditions(false)}\ncontainerStatuses:\n${containers(
      `ready: false
restartCount: 0
state:
  waiting:
    reason: ImagePullBackOff
    message: 'Back-off pulling image "{{ .image }}"'`)}\n${hostIP}`,
  },
  recovered: {
    from: ['Pending', 'Running'],
    template: `phase: Running\nstartTime: {{ $now | Quote }}\nconditions:\n${conditions(true)}\ncontainerStatuses:\n${containers(
      `ready: true
restartCount: 4
started: true
state:
  running:
    startedAt: {{ $now | Quote }}`)}\n${hostIP}`,
  },
};

function stage(state: SimulatedState): object {
  const { from, template } = statusTemplates[state];
  return {
    apiVersion: 'kwok.x-k8s.io/v1alpha1',
    kind: 'Stage',
    metadata: { name: `keelson-simulate-${state}` },
    spec: {
      resourceRef: { apiGroup: 'v1', kind: 'Pod' },
      weight: 1,
      selector: {
        matchLabels: { [simulateLabel]: state },
        matchExpressions: [
          { key: '.metadata.deletionTimestamp', operator: 'DoesNotExist' },
          { key: '.status.phase', operator: 'In', values: from },
        ],
      },
      // Times come from the pod's creation, not the clock: applying the stage again changes nothing, so it can
      // keep matching (and so keep winning over kwok's own stages) without looping.
      next: { statusTemplate: `{{ $now := .metadata.creationTimestamp }}\n${template}` },
    },
  };
}

/** Installs the simulation stages (idempotent; they apply only to pods carrying the label). */
export async function installSimulationStages(cluster: LocalCluster): Promise<void> {
  const items = (Object.keys(statusTemplates) as SimulatedState[]).map(stage);
  await cluster.kubectl(['apply', '--server-side', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }) });
}
