// Shared jest settings for every project (nx convention: one root preset).
// - swc transpiles TypeScript (ts-jest refuses TypeScript 7; swc is also faster).
// - Workers capped at 2: the machine has 2 cores and every worker gets its own database.
// - Stray console output fails the test (see jest.console-guard.js).
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  maxWorkers: 2,
  testTimeout: 30_000,
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        module: { type: 'commonjs', ignoreDynamic: true },
      },
    ],
  },
  moduleNameMapper: {
    '^@kairos/(schedule|proto|store|client|testing)$': '<rootDir>/libs/$1/src/index.ts',
    '^@kairos/(coordinator|agent|cli)$': '<rootDir>/apps/$1/src/index.ts',
  },
  setupFilesAfterEnv: ['<rootDir>/jest.console-guard.js'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
};
