// `npm start` (after synth): run the operator in the foreground against $KUBECONFIG, or, when none is set, against
// the local control plane (the one `npm run cluster -- up` started, or one started now and stopped on exit). The
// CRDs are applied first, from the source dist/ is synthesized from; on the local cluster with a real node the samples
// follow, on stand-ins for their public images; the JMX exporter agent (which the image carries) is fetched into the
// user's cache. Arguments after `npm start --` go to the controller.
import { join } from 'node:path';
import { LocalCluster } from '../cluster/cluster.ts';
import { keelsonFlags } from './api/flags.ts';
import { crdName, customResourceDefinition } from './api/kind.ts';
import { deferredOperators, kinds } from './operators/catalog.ts';
import { fetchAgent } from './operators/prometheusjmxexporter/agent.ts';
import { loadKubeConfig } from './runtime/kubeconfig.ts';
import { RestClient } from './runtime/rest.ts';
import { runController } from './runtime/run.ts';

const root = new URL('../..', import.meta.url).pathname;
const samplesNamespace = 'keelson-samples';

async function applyCrds(kubeconfig: string): Promise<void> {
  const rest = new RestClient(await loadKubeConfig(kubeconfig), 'keelson-start');
  for (const kind of kinds) {
    await rest.json({ method: 'PATCH', path: `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crdName(kind)}`,
      query: { fieldManager: 'keelson-start', force: true }, contentType: 'application/apply-patch+yaml',
      body: customResourceDefinition(kind) });
  }
  rest.close();
  console.error(`applied the CRDs of ${kinds.map((k) => k.kind).join(', ')}`);
}

let stopCluster: (() => Promise<void>) | undefined;
let useSamples: LocalCluster | undefined;
let kubeconfig = process.env.KUBECONFIG;
const running = LocalCluster.attach(join(root, '.cluster'));
// No KUBECONFIG, or the one `npm run cluster -- env` exported: the local cluster, with its samples.
if (!kubeconfig || kubeconfig === running?.state.kubeconfig) {
  let cluster = running;
  if (cluster) {
    console.error(`using the local cluster started by npm run cluster -- up: ${cluster.state.server}; kubeconfig ` +
      cluster.state.kubeconfig);
    // PostgreSQL members run their agent from the operator's image: this checkout's.
    const loaded = await cluster.refreshOperatorImage();
    if (loaded) console.error(`loaded ${loaded} into the node`);
  } else {
    console.error('no KUBECONFIG: starting a local control plane (npm run cluster -- up keeps one running)');
    cluster = await LocalCluster.start();
    stopCluster = () => cluster!.stop();
    const { realNode } = cluster.state;
    console.error(`local cluster ready: ${cluster.state.server}; kubeconfig ${cluster.state.kubeconfig}; ` +
      ('name' in realNode ? `pods run on the real node ${realNode.name}` : `no real node (${realNode.skipped})`));
  }
  kubeconfig = cluster.state.kubeconfig;
  if ('name' in cluster.state.realNode) useSamples = cluster;
  else console.error('the samples need the real node: dist/samples/ is not applied');
}

await applyCrds(kubeconfig);
if (useSamples) {
  // What the samples run is built here (cached after the first time), never pulled.
  const { applySamples } = await import('../cluster/samples.ts');
  const warnings = await applySamples(useSamples, samplesNamespace);
  console.error(`${warnings}samples applied in namespace ${samplesNamespace} (restricted Pod Security Standard), ` +
    `on stand-ins for their public images: kubectl get tds,pbt,pa,pgc,pje,pods -n ${samplesNamespace}`);
}
console.error(`JMX exporter agent: ${await fetchAgent()}`);
const code = await runController([`--kubeconfig=${kubeconfig}`, '--metrics-bind-address=127.0.0.1:8080',
  '--health-probe-bind-address=127.0.0.1:8081', ...process.argv.slice(2)], process.env, deferredOperators,
  { flags: keelsonFlags });
await stopCluster?.();
process.exit(code);
