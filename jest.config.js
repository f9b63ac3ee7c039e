const preset = require('./jest.preset.js');

/** @type {import('jest').Config} */
module.exports = {
  ...preset,
  rootDir: __dirname,
  roots: ['<rootDir>/libs', '<rootDir>/apps', '<rootDir>/tools'],
  testMatch: ['**/*.test.ts'],
  // One embedded PostgreSQL for the whole run (unless DATABASE_URL is set) and a migrated
  // template database; each test file clones its own database from it (libs/testing).
  globalSetup: '<rootDir>/libs/testing/jest/global-setup.mjs',
  globalTeardown: '<rootDir>/libs/testing/jest/global-teardown.mjs',
};
