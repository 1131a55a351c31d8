// Without a native binary (a clone without nvcc, or installed with --ignore-scripts) the suites
// that load it are left out, named with the reason, and the CPU suites still run. The GPU runner
// (CK_REQUIRE_GPU=1) never leaves anything out: a missing binary must fail there.
const { binaryStatus, suitesNeedingNative } = require('./test/helpers/native-suites.js');

const status = process.env.CK_REQUIRE_GPU ? { ok: true } : binaryStatus();
const withoutBinary = status.ok ? [] : suitesNeedingNative();
const escapeRegExp = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', ...withoutBinary.map((f) => `${escapeRegExp(f)}$`)],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json' }] },
  // The examples import the package by name, as users do.
  moduleNameMapper: { '^cuda-kernels$': '<rootDir>/lib/index.ts', '^cuda-kernels/cpu$': '<rootDir>/lib/cpu/index.ts' },
  verbose: true,
  // GPU suites copy hundreds of MB; the CPU-only run finishes in seconds either way.
  testTimeout: 120000,
  // Suites share one GPU: run them one after another so timings and memory checks do not interfere.
  maxWorkers: 1,
  reporters: [
    'default',
    '<rootDir>/test/helpers/skip-reporter.js',
    '<rootDir>/test/helpers/progress-reporter.js',
    ['<rootDir>/test/helpers/no-binary-reporter.js', { reason: status.reason ?? null, suites: withoutBinary }],
  ],
};
