export { startTestCluster, stopTestCluster, withClient, withDatabase, ENV_ADMIN_URL, ENV_TEMPLATE_DB, type TestCluster } from './cluster';
export { createTestDatabase, type TestDatabase } from './database';
export { waitFor, type WaitForOptions } from './wait-for';
export { insertJob, insertDueJobs, at, jobRow, runRows, FIXTURE_HOLDER, type JobFixture } from './factories';
export {
  spawnNode,
  spawnProgram,
  stopAll,
  isAlive,
  startCoordinatorProcess,
  startAgentProcess,
  COORDINATOR_MAIN,
  AGENT_MAIN,
  type ManagedProcess,
  type CoordinatorProcess,
  type LogLine,
} from './processes';
export { restClient, type RestResponse } from './rest-client';
export { makeTestPki, type TestPki } from './certificates';
export { metricValue } from './metrics';
export { startHeldCalls, type HeldCall, type HeldCalls } from './held-calls';
export { explainAnalyze, findPlanNodes, type AnalysedPlan, type PlanMode, type PlanNode } from './plans';
