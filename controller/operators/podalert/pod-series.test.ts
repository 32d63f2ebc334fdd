import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Registry } from 'prom-client';
import { maxSeriesPerPodAlert, UnhealthyPodSeries } from './pod-series.ts';

const shop = { namespace: 'apps', name: 'shop' };
const pod = (name: string, reason: string, at = 0) =>
  ({ pod: name, reason, since: new Date(at), workload: { kind: 'Deployment', name: 'web' } });

it('has one series per unhealthy pod, gone when the pod recovers, moved when its reason changes, and bounded', async () => {
  const registry = new Registry();
  const series = new UnhealthyPodSeries(registry, 'podalert');
  const lines = async () => (await registry.metrics()).split('\n').filter((l) => l.startsWith('keelson_podalert_pod_unhealthy{'));
  series.set(shop, [pod('web-1', 'CrashLoopBackOff'), pod('web-2', 'ImagePullBackOff')]);
  assert.deepEqual(await lines(), [
    'keelson_podalert_pod_unhealthy{podalert="shop",namespace="apps",pod="web-1",owner_kind="Deployment",owner="web",reason="CrashLoopBackOff"} 1',
    'keelson_podalert_pod_unhealthy{podalert="shop",namespace="apps",pod="web-2",owner_kind="Deployment",owner="web",reason="ImagePullBackOff"} 1']);
  series.set(shop, [pod('web-1', 'Error')]);
  assert.deepEqual((await lines()).map((l) => /pod="([^"]+)".*reason="([^"]+)"/.exec(l)!.slice(1).join(' ')), ['web-1 Error']);
  series.set(shop, Array.from({ length: maxSeriesPerPodAlert + 20 }, (_, i) => pod(`web-${i}`, 'NotReady', i)));
  const kept = await lines();
  assert.equal(kept.length, maxSeriesPerPodAlert);
  assert.ok(kept.some((l) => l.includes(`pod="web-${maxSeriesPerPodAlert + 19}"`)), 'the most recent are kept');
  series.remove(shop);
  assert.deepEqual(await lines(), []);
});

it('names a ClusterPodAlert\'s series by it, each with its pod\'s namespace', async () => {
  const registry = new Registry();
  const series = new UnhealthyPodSeries(registry, 'clusterpodalert');
  series.set({ name: 'teams' }, [{ ...pod('web-1', 'Error'), namespace: 'shop' }, { ...pod('web-1', 'Error'), namespace: 'cart' }]);
  const lines = (await registry.metrics()).split('\n').filter((l) => l.startsWith('keelson_clusterpodalert_pod_unhealthy{'));
  assert.deepEqual(lines, [
    'keelson_clusterpodalert_pod_unhealthy{clusterpodalert="teams",namespace="shop",pod="web-1",owner_kind="Deployment",owner="web",reason="Error"} 1',
    'keelson_clusterpodalert_pod_unhealthy{clusterpodalert="teams",namespace="cart",pod="web-1",owner_kind="Deployment",owner="web",reason="Error"} 1']);
  series.remove({ name: 'teams' });
  assert.equal((await registry.metrics()).includes('keelson_clusterpodalert_pod_unhealthy{'), false);
});
