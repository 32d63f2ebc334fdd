// The repository's own cdk8s app: the default install into dist/, the samples into dist/samples/, monitoring into
// dist/monitoring/ and the Helm chart into dist/helm/keelson/ (none applied by `kubectl apply -f dist/`, which does
// not recurse).
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { App, Chart, Yaml } from 'cdk8s';
import { releaseVersion } from '../controller/api/release.ts';
import { KeelsonCrds } from './crds.ts';
import { KeelsonInstall } from './install.ts';
import { dashboard } from './dashboard.ts';
import { helmChart } from './helm.ts';
import { KeelsonMonitoring, ruleGroups } from './monitoring.ts';
import { loadSamples, Samples } from './samples.ts';

const outdir = process.env.CDK8S_OUTDIR ?? 'dist';

const app = new App({ outdir });
const crds = new Chart(app, 'keelson-crds');
new KeelsonCrds(crds, 'crds');
const install = new Chart(app, 'keelson');
// KEELSON_IMAGE points the install at an image of your own (a registry's, a digest); dist/ keeps the default.
new KeelsonInstall(install, 'install', process.env.KEELSON_IMAGE ? { image: process.env.KEELSON_IMAGE } : {});
install.addDependency(crds);
app.synth();

const samples = new App({ outdir: join(outdir, 'samples') });
new Samples(samples, 'keelson-samples', { samples: await loadSamples() });
samples.synth();

// The Prometheus Operator's objects, and the same rules and a dashboard for those without it.
const monitoringDir = join(outdir, 'monitoring');
const monitoring = new App({ outdir: monitoringDir });
new KeelsonMonitoring(new Chart(monitoring, 'keelson-monitoring', { disableResourceNameHashes: true }), 'monitoring');
monitoring.synth();
mkdirSync(monitoringDir, { recursive: true });
writeFileSync(join(monitoringDir, 'prometheus-rules.yaml'), Yaml.stringify({ groups: ruleGroups }));
writeFileSync(join(monitoringDir, 'grafana-dashboard.json'), `${JSON.stringify(dashboard, null, 2)}\n`);

const helmDir = join(outdir, 'helm', 'keelson');
rmSync(helmDir, { recursive: true, force: true });
for (const [path, content] of helmChart(releaseVersion, readFileSync(join(outdir, '0000-keelson-crds.k8s.yaml'), 'utf8'))) {
  mkdirSync(dirname(join(helmDir, path)), { recursive: true });
  writeFileSync(join(helmDir, path), content);
}
