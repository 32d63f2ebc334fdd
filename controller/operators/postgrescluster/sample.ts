import { PostgresCluster, PostgresClusterSpecStorageSize } from '../../../imports/keelson-keelson.dev.ts';
import { sampleImages, type SampleWriter } from '../../api/samples.ts';

export const sample: SampleWriter = (scope) => {
  new PostgresCluster(scope, 'postgrescluster', {
    metadata: { name: 'orders-db' },
    spec: {
      size: 3,
      version: '15',
      image: sampleImages.postgresql,
      storage: { size: PostgresClusterSpecStorageSize.fromString('1Gi') },
      antiAffinity: true,
      backup: { schedule: '0 3 * * *', retain: 7 },
    },
  });
};
