// Where a release is published, stated once: .github/workflows/release.yml pushes the image and the chart here, and
// dist/, the Helm chart's values, KeelsonInstall's default and the PostgresCluster member agent's default name them.
import { readFileSync } from 'node:fs';

/** The operator's image repository; each release is tagged with package.json's version. */
export const imageRepository = 'ghcr.io/keelson-dev/keelson-controller';

/** The OCI registry path the Helm chart is pushed to: `helm install keelson oci://ghcr.io/keelson-dev/charts/keelson`. */
export const chartRegistry = 'oci://ghcr.io/keelson-dev/charts';

/** This package's version: package.json sits two folders above build/controller/api, in the checkout, in
 * node_modules/keelson and in the image alike. */
export const releaseVersion = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as
  { version: string }).version;

/** The image of this release: the one a default install runs. */
export const releaseImage = `${imageRepository}:${releaseVersion}`;
