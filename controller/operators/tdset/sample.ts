import { TdSet } from '../../../imports/keelson-keelson.dev.ts';
import { sampleImages, type SampleWriter } from '../../api/samples.ts';

export const sample: SampleWriter = (scope) => {
  new TdSet(scope, 'tdset', {
    metadata: { name: 'hello-world' },
    spec: {
      container: { image: sampleImages.helloWorld, port: 8000 },
      service: { port: 80 },
      // Office hours busy, evenings quieter, nights low; 0-1 falls back to defaultReplica.
      schedulingConfig: [
        { startTime: 9, endTime: 17, replica: 5 },
        { startTime: 17, endTime: 19, replica: 3 },
        { startTime: 19, endTime: 0, replica: 2 },
        { startTime: 1, endTime: 7, replica: 2 },
        { startTime: 7, endTime: 9, replica: 3 },
      ],
      defaultReplica: 3,
      timeZone: 'Europe/Berlin',
    },
  });
};
