import { PodBuggerTool, PodBuggerToolSpecProfile } from '../../../imports/keelson-keelson.dev.ts';
import { sampleApp, sampleImages, type SampleWriter } from '../../api/samples.ts';

export const sample: SampleWriter = (scope) => {
  // The course service that PodBuggerTool gives a debug container.
  sampleApp(scope, 'teachstore-course', sampleImages.helloWorld, { port: 8000 });
  new PodBuggerTool(scope, 'podbuggertool', {
    metadata: { name: 'debug-course' },
    // restricted: the debug container meets the standard the namespace may enforce.
    spec: { label: 'app=teachstore-course', image: sampleImages.tools, profile: PodBuggerToolSpecProfile.RESTRICTED },
  });
};
