// The install, from the same constructs as Keelson's: the CRD from the schema, RBAC from the declared permissions,
// the Deployment with the runtime's flags. `npm run synth` writes dist/.
import { App, Chart } from 'cdk8s';
import { CustomResourceDefinitions, OperatorInstall } from 'keelson/charts';
import { configMapReplicator } from './operator.ts';
import { ConfigMapReplication } from './schema.ts';

const app = new App({ outdir: process.env.CDK8S_OUTDIR ?? 'dist' });
const crds = new Chart(app, 'configmap-replicator-crds');
new CustomResourceDefinitions(crds, 'crds', { kinds: [ConfigMapReplication] });
const install = new Chart(app, 'configmap-replicator');
new OperatorInstall(install, 'install', {
  name: 'configmap-replicator',
  app: 'configmap-replicator',
  namespace: 'configmap-replicator',
  image: process.env.IMAGE ?? 'registry.example/configmap-replicator:0.1.0',
  operators: [configMapReplicator],
});
install.addDependency(crds);
app.synth();
