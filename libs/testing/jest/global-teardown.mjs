import testing from '../dist/index.js';

export default async function globalTeardown() {
  const cluster = globalThis.__KAIROS_TEST_CLUSTER__;
  if (cluster) await testing.stopTestCluster(cluster);
}
