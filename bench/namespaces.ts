// Namespaces for the benchmark's runs, made fresh and removed before the next run starts, so no run pays for the
// previous one's garbage collection.
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, type RestClient } from '../controller/runtime/rest.ts';
import { inParallel } from './workload.ts';

export async function ensureNamespace(admin: RestClient, name: string): Promise<void> {
  await admin.json({ method: 'POST', path: '/api/v1/namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } })
    .catch((error) => { if (!(error instanceof ApiError && error.status === 409)) throw error; });
}

export async function deleteNamespace(admin: RestClient, name: string, timeoutMs = 15 * 60_000): Promise<void> {
  await admin.json({ method: 'DELETE', path: `/api/v1/namespaces/${name}` })
    .catch((error) => { if (!(error instanceof ApiError && error.status === 404)) throw error; });
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const gone = await admin.json({ method: 'GET', path: `/api/v1/namespaces/${name}` })
      .then(() => false, (error) => error instanceof ApiError && error.status === 404);
    if (gone) return;
    await sleep(1000);
  }
  throw new Error(`namespace ${name} still there after ${timeoutMs / 1000}s`);
}

/** `count` pods on the simulated nodes in `namespace`, all Running; made once and shared by every run. */
export async function ensurePods(admin: RestClient, namespace: string, count: number, nodes: readonly string[],
  log: (message: string) => void): Promise<void> {
  await ensureNamespace(admin, namespace);
  const running = async () => (await admin.json<{ items: { status?: { phase?: string } }[] }>({ method: 'GET',
    path: `/api/v1/namespaces/${namespace}/pods`, query: { fieldSelector: 'status.phase=Running' }, timeoutMs: 120_000 })).items.length;
  const names = Array.from({ length: count }, (_, i) => `pod-${i}`);
  log(`creating ${count} pods on ${nodes.join(', ')}`);
  await inParallel(names, 32, async (name) => {
    await admin.json({ method: 'POST', path: `/api/v1/namespaces/${namespace}/pods`, body: { apiVersion: 'v1', kind: 'Pod',
      metadata: { name, labels: { app: 'bench', tier: name.slice(-1) } },
      spec: { nodeName: nodes[Number(name.slice(4)) % nodes.length], containers: [{ name: 'app', image: 'registry.example/app:1' }] } } })
      .catch((error) => { if (!(error instanceof ApiError && error.status === 409)) throw error; });
  });
  const deadline = Date.now() + 20 * 60_000;
  while ((await running()) < count) {
    if (Date.now() > deadline) throw new Error(`fewer than ${count} pods Running in ${namespace} after 20 min`);
    await sleep(2000);
  }
}
