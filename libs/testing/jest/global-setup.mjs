// jest globalSetup: one PostgreSQL for the run and a migrated template database.
// Runs in plain Node (outside the test VM), so it loads the compiled library.
import testing from '../dist/index.js';

export default async function globalSetup() {
  const cluster = await testing.startTestCluster();
  globalThis.__KAIROS_TEST_CLUSTER__ = cluster;
  process.env[testing.ENV_ADMIN_URL] = cluster.adminUrl;
  process.env[testing.ENV_TEMPLATE_DB] = cluster.templateDb;
}
