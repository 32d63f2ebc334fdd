// Namespaces for the benchmark's runs, made fresh and removed before the next run starts, so no run pays for the
// previous one's garbage collection.
import { ApiError, type RestClient } from '../controller/runtime/rest.ts';
import { waitFor } from '../cluster/wait.ts';
import { inParallel } from './workload.ts';

/** Treats an ApiError with `status` (409 Conflict on create, 404 on delete) as success: it is already so. */
const alreadySo = (status: number) => (error: unknown) => {
  if (!(error instanceof ApiError && error.status === status)) throw error;
};

export async function ensureNamespace(admin: RestClient, name: string): Promise<void> {
  await admin.json({ method: 'POST', path: '/api/v1/namespaces', body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } })
    .catch(alreadySo(409));
}

export async function deleteNamespace(admin: RestClient, name: string, timeoutMs = 15 * 60_000): Promise<void> {
  await admin.json({ method: 'DELETE', path: `/api/v1/namespaces/${name}` })
    .catch(alreadySo(404));
  await waitFor(`namespace ${name} gone`, () => admin.json({ method: 'GET', path: `/api/v1/namespaces/${name}` })
    .then(() => false, (error) => error instanceof ApiError && error.status === 404), { timeoutMs, intervalMs: 1000 });
}

/** Where the memory, growth and churn cases' pods live. */
export const podsNamespace = 'bench-pods';

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
      .catch(alreadySo(409));
  });
  await waitFor(`${count} pods Running in ${namespace}`, async () => (await running()) >= count,
    { timeoutMs: 20 * 60_000, intervalMs: 2000 });
}
