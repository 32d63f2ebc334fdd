import { ClusterPodAlert } from '../../../imports/keelson-keelson.dev.ts';
import type { SampleWriter } from '../../api/samples.ts';

/** The label of the namespaces the sample picks; `npm start` gives it to the samples' namespace. */
export const sampleNamespaceLabel = { 'keelson.dev/pod-alerts': 'on' };

export const sample: SampleWriter = (scope) => {
  new ClusterPodAlert(scope, 'clusterpodalert', {
    metadata: { name: 'labelled-namespaces' },
    spec: { namespaceSelector: { matchLabels: sampleNamespaceLabel }, alerts: { checkRunningPods: true },
      gracePeriodSeconds: 60, logLines: 20 },
  });
};
