/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  // The examples import the package by name, as users do.
  moduleNameMapper: { '^cuda-kernels$': '<rootDir>/lib/index.ts' },
  verbose: true,
  // GPU suites copy hundreds of MB; the CPU-only run finishes in seconds either way.
  testTimeout: 120000,
  // Suites share one GPU: run them one after another so timings and memory checks do not interfere.
  maxWorkers: 1,
  reporters: ['default', '<rootDir>/test/helpers/skip-reporter.js', '<rootDir>/test/helpers/progress-reporter.js'],
};
