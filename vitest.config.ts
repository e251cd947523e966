import { defineConfig } from 'vitest/config';

// Two projects: unit tests of pure logic sit beside the code and need nothing running;
// integration tests under test/ share one real control plane and one real Redis per run.
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['**/*.test.ts'],
          exclude: ['test/**', 'node_modules/**', '.cache/**', 'bench/**'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          globalSetup: ['test/harness/global-setup.ts'],
          environment: 'node',
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // The sandbox has two cores; files run one at a time so timing-sensitive tests are fair.
          fileParallelism: false,
        },
      },
    ],
  },
});
