import { k8s } from 'cdk8s-plus-27';
import { PrometheusJmxExporter } from '../../../imports/keelson-keelson.dev.ts';
import { javaAppSource, sampleApp, sampleImages, type SampleWriter } from '../../api/samples.ts';

export const sample: SampleWriter = (scope) => {
  // A JVM service, run from its source by a public JDK image (its attach socket in /tmp, an emptyDir), and what the
  // exporter exports of it.
  sampleApp(scope, 'java-app', sampleImages.jdk, { port: 8080, command: ['java', '/app/App.java'],
    files: { 'App.java': javaAppSource }, tmp: true });
  new k8s.KubeConfigMap(scope, 'jmx-exporter-config', {
    metadata: { name: 'jmx-exporter-config' },
    data: { 'config.yaml': 'lowercaseOutputName: true\nrules:\n- pattern: ".*"\n' },
  });
  new PrometheusJmxExporter(scope, 'prometheusjmxexporter', {
    metadata: { name: 'java-apps' },
    spec: {
      labelSelector: { app: 'java-app' },
      config: { configMapName: 'jmx-exporter-config', configMapKey: 'config.yaml' },
      port: 9404,
    },
  });
};
