// The churn scenario: a PodAlert over every pod of a namespace holding the memory case's pods, while pods are
// created (crash-looping, through the cluster's kwok simulation stage) and deleted at a steady rate. Measured: from
// each pod change, as the benchmark's own watch sees it, to the PodAlert status showing it; the controller's CPU, the
// status and Event writes it made, and its peak resident set.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Pod } from '../controller/runtime/core.ts';
import type { RestClient } from '../controller/runtime/rest.ts';
import { kindType, pathOf, types, type KubeObject } from '../controller/runtime/resources.ts';
import { PodAlert } from '../controller/operators/podalert/schema.ts';
import { simulateLabel } from '../cluster/stages.ts';
import { waitFor } from '../cluster/wait.ts';
import { difference, requestCounts } from './apiserver.ts';
import { ChurnLedger } from './ledger.ts';
import { podsNamespace } from './namespaces.ts';
import { quantile } from './stats.ts';
import { record, type Bench, type Contender } from './scenarios.ts';
import { watch } from './watch.ts';

const podAlertType = kindType(PodAlert);

interface WatchedPodAlert extends KubeObject {
  status?: { lastEvaluationTime?: string; alerts?: { pod: string }[] };
}

const crashLooping = (pod: Pod) =>
  pod.status?.containerStatuses?.some((c) => c.state?.waiting?.reason === 'CrashLoopBackOff') ?? false;

function churnPod(name: string, run: string, node: string): object {
  return { apiVersion: 'v1', kind: 'Pod',
    metadata: { name, labels: { app: 'bench', churn: run, [simulateLabel]: 'crash-loop' } },
    spec: { nodeName: node, containers: [{ name: 'app', image: 'registry.example/app:1' }] } };
}

async function removePods(admin: RestClient, run: string): Promise<void> {
  await admin.json({ method: 'DELETE', path: pathOf(types.pods, podsNamespace), query: { labelSelector: `churn=${run}` } });
}

/** One repetition of the churn scenario for one controller. */
export async function churn(bench: Bench, who: Contender, rep: number): Promise<void> {
  const implementation = who.controller;
  if (!implementation || who.name === 'kopf') return;
  const { admin, settings } = bench;
  const { perSecond, seconds, lifetimeSeconds } = settings.churn;
  const run = `${who.name}-${rep}`;
  const name = `churn-${run}`;
  bench.log(`${who.name} #${rep}: churn, ${perSecond} pods/s over ${settings.pods} pods for ${seconds} s`);
  const ledger = new ChurnLedger();
  let evaluated = false;
  const watches = [
    await watch<Pod>(admin, pathOf(types.pods, podsNamespace), (type, pod, at) => {
      if (type === 'DELETED' || pod.metadata.deletionTimestamp) ledger.podGone(pod.metadata.name, at);
      else if (crashLooping(pod)) ledger.podUnhealthy(pod.metadata.name, at);
    }, bench.log, { labelSelector: `churn=${run}` }),
    await watch<WatchedPodAlert>(admin, pathOf(podAlertType, podsNamespace), (type, alert, at) => {
      if (type === 'DELETED' || !alert.status?.lastEvaluationTime) return;
      evaluated = true;
      ledger.statusSeen(new Set((alert.status.alerts ?? []).map((a) => a.pod)), at);
    }, bench.log, { fieldSelector: `metadata.name=${name}` }),
  ];
  await admin.json({ method: 'POST', path: pathOf(podAlertType, podsNamespace), body: { apiVersion: 'keelson.dev/v1alpha1',
    kind: 'PodAlert', metadata: { name },
    spec: { alerts: { checkRunningPods: true }, selector: { matchLabels: { app: 'bench' } }, gracePeriodSeconds: 0,
      logLines: 0 } } });
  const started = performance.now();
  const controller = implementation.start({ kubeconfig: bench.kubeconfig, operator: 'podalert', cachePods: false,
    profileDir: bench.profileDir });
  const changes: Promise<unknown>[] = [];
  try {
    await waitFor('a first status', () => evaluated, { timeoutMs: 10 * 60_000, intervalMs: 100 });
    record(bench.results, `churn: start-up to first status, ${settings.pods} pods (s)`, who.name,
      (performance.now() - started) / 1000);
    const writes = async () => Promise.all([requestCounts(admin, ['podalerts']), requestCounts(admin, ['events'])]);
    const [before, cpu, began] = [await writes(), controller.usage().cpuSeconds, performance.now()];
    const lifetime = perSecond * lifetimeSeconds;
    for (let k = 0; k < perSecond * seconds; k++) {
      const wait = began + (k * 1000) / perSecond - performance.now();
      if (wait > 0) await sleep(wait);
      changes.push(admin.json({ method: 'POST', path: pathOf(types.pods, podsNamespace),
        body: churnPod(`${name}-${k}`, run, bench.nodes[k % bench.nodes.length]!) }));
      if (k >= lifetime) {
        changes.push(admin.json({ method: 'DELETE', path: pathOf(types.pods, podsNamespace, `${name}-${k - lifetime}`) }));
      }
    }
    await Promise.all(changes);
    await removePods(admin, run);
    await waitFor('every pod change to show in the status', () => ledger.pending === 0,
      { timeoutMs: 120_000, intervalMs: 100 });
    const delays = ledger.delays();
    record(bench.results, 'churn: pod change to status p50 (ms)', who.name, quantile(delays, 0.5));
    record(bench.results, 'churn: pod change to status p99 (ms)', who.name, quantile(delays, 0.99));
    record(bench.results, 'churn: CPU (s)', who.name, controller.usage().cpuSeconds - cpu);
    // client-go's recorder drops an object's Events past a burst of 25 (its spam filter); Keelson's records each.
    const [statusWrites, eventWrites] = (await writes()).map((after, i) => difference(after, before[i]!).writes);
    record(bench.results, 'churn: status writes', who.name, statusWrites!);
    record(bench.results, 'churn: Event writes', who.name, eventWrites!);
    record(bench.results, `churn: peak RSS, ${settings.pods} pods (MiB)`, who.name,
      controller.usage().peakRssBytes / (1 << 20));
  } catch (error) {
    throw new Error(`${who.name} in churn: ${(error as Error).message}\n${controller.tail()}`);
  } finally {
    watches.forEach((w) => w.stop());
    await controller.stop();
    await Promise.allSettled(changes);
    await removePods(admin, run);
    await admin.json({ method: 'DELETE', path: pathOf(podAlertType, podsNamespace, name) });
  }
}
