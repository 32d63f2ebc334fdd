// One example per kind, from each operator's folder (its sample.ts), written with the typed constructs in imports/
// as a GitOps repository would write them, with the workloads they act on.
import { Chart } from 'cdk8s';
import type { Construct } from 'constructs';
import { catalog } from '../controller/operators/catalog.ts';
import type { SampleWriter } from '../controller/api/samples.ts';

export interface SamplesProps {
  /** @default none: kubectl's -n, or its context's namespace, decides */
  namespace?: string;
  /** What each operator adds, in catalog order: `await loadSamples()`. */
  samples: readonly SampleWriter[];
}

/** Every operator's sample writer, in catalog order. */
export const loadSamples = (): Promise<SampleWriter[]> => Promise.all(catalog.map((entry) => entry.sample()));

export class Samples extends Chart {
  constructor(scope: Construct, id: string, props: SamplesProps) {
    super(scope, id, { ...props.namespace ? { namespace: props.namespace } : {}, disableResourceNameHashes: true });
    for (const write of props.samples) write(this);
  }
}
