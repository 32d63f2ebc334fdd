import { PodAlert } from '../../../imports/keelson-keelson.dev.ts';
import type { SampleWriter } from '../../api/samples.ts';

export const sample: SampleWriter = (scope) => {
  new PodAlert(scope, 'podalert', {
    metadata: { name: 'unhealthy-pods' },
    spec: { alerts: { checkRunningPods: true }, gracePeriodSeconds: 60, logLines: 20 },
  });
};
